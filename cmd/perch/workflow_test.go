package main

import (
	"io"
	"strings"
	"testing"
)

// PERCH_WORKFLOW_ALLOW_PRIVATE: off by default, a boolean, and said out
// loud at start-up when on.
func TestWorkflowAllowPrivateSetting(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := parseConfig("serve", nil, env(nil), io.Discard)
	if err != nil || c.WorkflowPrivate {
		t.Fatalf("default: %v, %v", c.WorkflowPrivate, err)
	}
	c, err = parseConfig("serve", nil, env(map[string]string{"PERCH_WORKFLOW_ALLOW_PRIVATE": "true"}), io.Discard)
	if err != nil || !c.WorkflowPrivate {
		t.Fatalf("true: %v, %v", c.WorkflowPrivate, err)
	}
	c, err = parseConfig("serve", []string{"--workflow-allow-private=false"}, env(map[string]string{"PERCH_WORKFLOW_ALLOW_PRIVATE": "true"}), io.Discard)
	if err != nil || c.WorkflowPrivate {
		t.Fatalf("the flag over the variable: %v, %v", c.WorkflowPrivate, err)
	}
	_, err = parseConfig("serve", nil, env(map[string]string{"PERCH_WORKFLOW_ALLOW_PRIVATE": "sometimes"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "PERCH_WORKFLOW_ALLOW_PRIVATE") || !strings.Contains(err.Error(), "want true or false") {
		t.Fatalf("a bad value: %v", err)
	}

	const warning = "workflow forwards may reach loopback"
	on := &syncBuffer{}
	startServerLogging(t, map[string]string{"PERCH_WORKFLOW_ALLOW_PRIVATE": "true"}, on)
	if !strings.Contains(on.String(), warning) {
		t.Fatalf("no warning with private addresses allowed:\n%s", on)
	}
	off := &syncBuffer{}
	startServerLogging(t, map[string]string{}, off)
	if strings.Contains(off.String(), warning) {
		t.Fatalf("a warning with the default:\n%s", off)
	}
}
