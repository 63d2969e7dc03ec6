package conformance_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/conformance/cli"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/sqlite"
)

// The contract and the suite must not drift apart (STYLE pitfall 3):
// docs/contract.md holds every rule and, between these markers, the rule →
// case table that the suite generates.
const (
	docPath         = "../docs/contract.md"
	docBegin        = "<!-- cases:begin -->"
	docEnd          = "<!-- cases:end -->"
	docPerDriver    = "*Checked per driver:*"
	docCheckedWith  = "*Checked by the cases of "
	docRegenerate   = "regenerate it: go run ./cmd/conformance -list -format markdown, pasted between the markers, or SYNCSTORE_UPDATE_DOCS=1 go test ./conformance -run TestContractDoc"
	docUpdateEnvVar = "SYNCSTORE_UPDATE_DOCS"
)

// docRule is one rule of docs/contract.md.
type docRule struct {
	id        string
	line      string // the rule's line as written ("- SEQ-1 The first …")
	core      bool   // under a "(core…)" section heading
	perDriver bool   // has a "*Checked per driver:*" note
	with      string // the rule of a "*Checked by the cases of RULE:*" note
}

var (
	docRuleRE    = regexp.MustCompile(`^- ([A-Z]+-[0-9]+) `)
	docWithRE    = regexp.MustCompile(`^  \*Checked by the cases of ([A-Z]+-[0-9]+):\*`)
	docHeadingRE = regexp.MustCompile(`^## `)
)

// parseContract returns the rules of a contract document in order.
func parseContract(t *testing.T, text string) []docRule {
	t.Helper()
	var rules []docRule
	core := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case docHeadingRE.MatchString(l):
			core = strings.Contains(l, "(core")
		case docRuleRE.MatchString(l):
			rules = append(rules, docRule{id: docRuleRE.FindStringSubmatch(l)[1], line: l, core: core})
		case strings.HasPrefix(l, "  ") && len(rules) > 0 && strings.Contains(l, docPerDriver):
			rules[len(rules)-1].perDriver = true
		case docWithRE.MatchString(l) && len(rules) > 0:
			rules[len(rules)-1].with = docWithRE.FindStringSubmatch(l)[1]
		}
	}
	return rules
}

// splitDoc returns the doc around the generated table and the table.
func splitDoc(t *testing.T, doc string) (before, table, after string) {
	t.Helper()
	i, j := strings.Index(doc, docBegin), strings.Index(doc, docEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: markers %s … %s missing or out of order", docPath, docBegin, docEnd)
	}
	return doc[:i+len(docBegin)], strings.TrimPrefix(doc[i+len(docBegin):j], "\n"), doc[j:]
}

func TestContractDocTableMatchesSuite(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	before, table, after := splitDoc(t, string(raw))
	want := cli.MarkdownCaseTable(conformance.Cases())
	if table == want {
		return
	}
	if os.Getenv(docUpdateEnvVar) == "1" {
		if err := os.WriteFile(docPath, []byte(before+"\n"+want+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: rule → case table rewritten", docPath)
		return
	}
	t.Errorf("%s: the rule → case table differs from the suite (-doc +suite):\n%s\n%s",
		docPath, cmp.Diff(strings.Split(table, "\n"), strings.Split(want, "\n")), docRegenerate)
}

func TestContractDocEveryRuleChecked(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	rules := parseContract(t, string(raw))
	if len(rules) < 50 {
		t.Fatalf("%s: found only %d rules; is the format `- ID text` under `## ` headings?", docPath, len(rules))
	}
	inDoc := map[string]docRule{}
	for _, r := range rules {
		if _, dup := inDoc[r.id]; dup {
			t.Errorf("%s: rule %s appears twice", docPath, r.id)
		}
		inDoc[r.id] = r
	}
	cases := map[string][]string{}
	for _, c := range conformance.Cases() {
		if _, ok := inDoc[c.Rule()]; !ok {
			t.Errorf("case %s cites rule %s, which is not in %s", c.Name, c.Rule(), docPath)
		}
		cases[c.Rule()] = append(cases[c.Rule()], c.Name)
	}
	for _, r := range rules {
		switch {
		case (r.perDriver || r.with != "") && len(cases[r.id]) > 0:
			t.Errorf("rule %s has suite cases %v and a note saying it is checked elsewhere; drop the note", r.id, cases[r.id])
		case r.with != "" && len(cases[r.with]) == 0:
			t.Errorf("rule %s is noted as checked by the cases of %s, which has none", r.id, r.with)
		case r.core && !r.perDriver && r.with == "" && len(cases[r.id]) == 0:
			t.Errorf("core rule %s has no conformance case, no %q note and no %q note in %s", r.id, docPerDriver, docCheckedWith+"RULE:*", docPath)
		case !r.core && len(cases[r.id]) == 0:
			t.Logf("capability rule %s has no case yet", r.id)
		}
	}
}

// TestContractDocMatchesSharedContract checks docs/contract.md against
// the project's CONTRACT.md when it is found beside the repository
// (../shared/CONTRACT.md, or the file named by SYNCSTORE_CONTRACT): every
// rule line of its settled sections is copied verbatim, in order, and
// every rule of its "## Added …" sections (drafts that CONTRACT.md says
// are finalised in docs/contract.md) appears in the doc by ID. The doc may
// hold rules CONTRACT.md does not (new rule groups go there).
func TestContractDocMatchesSharedContract(t *testing.T) {
	src := os.Getenv("SYNCSTORE_CONTRACT")
	if src == "" {
		src = filepath.Join("..", "..", "shared", "CONTRACT.md")
	}
	shared, err := os.ReadFile(src)
	if os.IsNotExist(err) {
		t.Skipf("no shared contract at %s (set SYNCSTORE_CONTRACT to compare)", src)
	}
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	settled, drafts := string(shared), ""
	if i := strings.Index(settled, "\n## Added "); i >= 0 {
		settled, drafts = settled[:i], settled[i:]
	}
	doc := parseContract(t, string(raw))
	inDoc := map[string]string{}
	for _, r := range doc {
		inDoc[r.id] = r.line
	}
	var want, got []string
	for _, r := range parseContract(t, settled) {
		want = append(want, r.line)
		got = append(got, inDoc[r.id])
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("settled rules of %s differ in %s (-shared +doc):\n%s\ncopy the changed rules into the doc", src, docPath, d)
	}
	for _, r := range parseContract(t, drafts) {
		if _, ok := inDoc[r.id]; !ok {
			t.Errorf("rule %s, drafted in %s, is not in %s: finalise it there", r.id, src, docPath)
		}
	}
}

// TestCapabilitiesDocMatchesSQLite checks the sqlite row of the matrix in
// docs/capabilities.md against what the bundled SQLite driver declares.
func TestCapabilitiesDocMatchesSQLite(t *testing.T) {
	raw, err := os.ReadFile("../docs/capabilities.md")
	if err != nil {
		t.Fatal(err)
	}
	var head, row []string
	for _, l := range strings.Split(string(raw), "\n") {
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		switch {
		case len(cells) > 2 && cells[0] == "Driver" && cells[1] == "core":
			head = cells
		case head != nil && len(cells) == len(head) && cells[0] == "`sqlite`":
			row = cells
		}
	}
	if row == nil {
		t.Fatal("docs/capabilities.md: no matrix row for `sqlite` under a `| Driver | core | …` head")
	}
	doc := map[string]bool{}
	for i, name := range head[2:] {
		doc[name] = row[i+2] == "yes"
	}

	d := sqlite.Driver{}
	dsn, drop, err := d.Provision(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drop(context.Background()) })
	c, err := d.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := map[string]bool{}
	for _, capability := range driver.AllCapabilities {
		got[string(capability)] = driver.ConnHas(c, capability)
	}
	if d := cmp.Diff(got, doc); d != "" {
		t.Errorf("docs/capabilities.md's sqlite row differs from what drivers/sqlite declares (-driver +doc):\n%s", d)
	}
}
