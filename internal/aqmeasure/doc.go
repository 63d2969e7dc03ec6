// Package aqmeasure holds, behind the build tag aqmeasure, a test that
// measures the authoritative-query attacks of AQ-6 on every
// bundled driver: time and client RSS growth per attack. See its test
// file; nothing here is built without the tag.
package aqmeasure
