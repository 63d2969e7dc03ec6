package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/syncstore/syncstore/conformance"
)

// listEntry is one case in `-list -format json`.
type listEntry struct {
	Name       string `json:"name"`
	Rule       string `json:"rule"`
	Capability string `json:"capability"`
}

// capabilityOf returns the case's capability, "core" for a core case.
func capabilityOf(c conformance.Case) string {
	if c.Capability == "" {
		return "core"
	}
	return string(c.Capability)
}

// writeList writes the cases in the given format (text, json, markdown).
func writeList(w io.Writer, format string, cases []conformance.Case) error {
	switch format {
	case "json":
		out := make([]listEntry, len(cases))
		for i, c := range cases {
			out[i] = listEntry{Name: c.Name, Rule: c.Rule(), Capability: capabilityOf(c)}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case "markdown":
		_, err := io.WriteString(w, MarkdownCaseTable(cases))
		return err
	default:
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "RULE\tCAPABILITY\tCASE\n")
		for _, c := range cases {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Rule(), capabilityOf(c), c.Name)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "%d cases\n", len(cases))
		return err
	}
}

// MarkdownCaseTable returns the rule → case table of docs/contract.md: one
// row per rule that has cases, in the order of cases (conformance.Cases
// returns contract order), with the rule's capability ("core" for core
// rules) and its case names. It is what `conformance -list -format
// markdown` prints; conformance/contract_doc_test.go fails when the table
// in docs/contract.md differs from it.
func MarkdownCaseTable(cases []conformance.Case) string {
	var rules []string
	byRule := map[string][]conformance.Case{}
	for _, c := range cases {
		r := c.Rule()
		if _, ok := byRule[r]; !ok {
			rules = append(rules, r)
		}
		byRule[r] = append(byRule[r], c)
	}
	var b strings.Builder
	b.WriteString("| Rule | Capability | Cases |\n")
	b.WriteString("| --- | --- | --- |\n")
	for _, r := range rules {
		cs := byRule[r]
		caps := map[string]bool{}
		names := make([]string, len(cs))
		for i, c := range cs {
			caps[capabilityOf(c)] = true
			names[i] = "`" + mdEscape(c.Name) + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", mdEscape(r), strings.Join(sortedKeys(caps), ", "), strings.Join(names, "<br>"))
	}
	return b.String()
}

// mdEscape escapes the one character that breaks a table cell.
func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
