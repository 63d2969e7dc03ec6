package cli

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/syncstore/syncstore/conformance"
)

// The JUnit XML shapes written by -format junit: the common dialect read by
// CI systems (Jenkins, GitLab, GitHub test reporters). One <testsuite> per
// run, one <testcase> per selected case; a failed case has a <failure>; a
// skipped, not-implemented or interrupted case a <skipped> whose type
// says which (SKIP, NOT IMPLEMENTED, INTERRUPTED). The skipped attribute
// counts every <skipped>, as JUnit readers expect; the suite's properties
// count.skipped, count.notImplemented and count.interrupted keep the
// three apart. Times are seconds.
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
		Skipped:  rep.Skipped + rep.NotImplemented + rep.Interrupted,
		Time:     seconds(rep.Duration),
		Properties: []junitProperty{
			{Name: "driver", Value: rep.Driver},
			{Name: "engineVersion", Value: rep.EngineVersion},
			{Name: "count.passed", Value: strconv.Itoa(rep.Passed)},
			{Name: "count.failed", Value: strconv.Itoa(rep.Failed)},
			{Name: "count.skipped", Value: strconv.Itoa(rep.Skipped)},
			{Name: "count.notImplemented", Value: strconv.Itoa(rep.NotImplemented)},
			{Name: "count.interrupted", Value: strconv.Itoa(rep.Interrupted)},
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
		case conformance.StatusSkip, conformance.StatusNotImplemented, conformance.StatusInterrupted:
			jc.Skipped = &junitMessage{Message: lastLine(out, string(c.Status)), Type: string(c.Status), Text: out}
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

// lastLine returns the last line of s (a skip's or an interrupt's
// reason), or def when s is empty.
func lastLine(s, def string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return def
	}
	return s[strings.LastIndex(s, "\n")+1:]
}
