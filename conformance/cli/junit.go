package cli

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/syncstore/syncstore/conformance"
)

// The JUnit XML shapes written by -format junit: the common dialect read by
// CI systems (Jenkins, GitLab, GitHub test reporters). One <testsuite> per
// run, one <testcase> per selected case; a failed case has a <failure>, a
// skipped or not-implemented case a <skipped>. Times are seconds.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure"`
	Skipped   *junitMessage `xml:"skipped"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// junitReport converts a conformance report to JUnit shapes. The classname
// is "conformance.<driver>.<capability>" ("core" for core cases), so CI
// views group cases by capability.
func junitReport(rep conformance.Report) junitSuites {
	suite := junitSuite{
		Name:     "conformance/" + rep.Driver,
		Tests:    len(rep.Cases),
		Failures: rep.Failed,
		Skipped:  rep.Skipped,
		Time:     seconds(rep.Duration),
		Properties: []junitProperty{
			{Name: "driver", Value: rep.Driver},
			{Name: "engineVersion", Value: rep.EngineVersion},
		},
	}
	for _, c := range rep.Capabilities {
		suite.Properties = append(suite.Properties, junitProperty{Name: "capability." + string(c.Capability), Value: yesNo(c.Declared)})
	}
	for _, c := range rep.Cases {
		group := string(c.Capability)
		if group == "" {
			group = "core"
		}
		jc := junitCase{
			Name:      c.Name,
			Classname: "conformance." + rep.Driver + "." + group,
			Time:      seconds(c.Duration),
		}
		out := strings.Join(c.Output, "\n")
		switch c.Status {
		case conformance.StatusFail:
			jc.Failure = &junitMessage{Message: "rule " + c.Rule + " failed (see docs/contract.md)", Type: "FAIL", Text: out}
		case conformance.StatusSkip, conformance.StatusNotImplemented:
			jc.Skipped = &junitMessage{Message: firstLine(out, string(c.Status))}
		default:
			jc.SystemOut = out
		}
		suite.Cases = append(suite.Cases, jc)
	}
	return junitSuites{
		Name:     "syncstore conformance",
		Tests:    suite.Tests,
		Failures: suite.Failures,
		Skipped:  suite.Skipped,
		Time:     suite.Time,
		Suites:   []junitSuite{suite},
	}
}

// writeJUnit writes rep as an indented JUnit XML document.
func writeJUnit(w io.Writer, rep conformance.Report) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitReport(rep)); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// seconds renders d as JUnit's decimal seconds ("0.012").
func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// firstLine returns the first line of s, or def when s is empty.
func firstLine(s, def string) string {
	if s == "" {
		return def
	}
	l, _, _ := strings.Cut(s, "\n")
	return l
}
