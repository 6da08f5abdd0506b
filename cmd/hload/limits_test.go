package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// hugeTest runs 10,000,000 VUs, far beyond the memory and open files of
// any machine the tests run on, against var.base_url.
const hugeTest = `
variable "base_url" {}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor = "constant-vus"
  vus      = 10000000
  duration = "30s"
  request "r" {
    path = "/"
  }
}
`

// TestFaultTooLargeForTheMachine: validate, plan and apply refuse a test whose
// VUs cannot fit this machine, exit 2, naming the figure and the limit, on
// the attribute that sets them; apply sends nothing (the server counts
// 0). An open model whose default pool is sized from rate = 1e9 is refused
// alike.
func TestFaultTooLargeForTheMachine(t *testing.T) {
	srv, served := okServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "huge.hcl", hugeTest)
	writeFile(t, dir, "rate.hcl", `
target "t" {
  base_url = "`+srv.URL+`"
}
scenario "s" {
  executor = "constant-arrival-rate"
  rate     = 1e9
  duration = "30s"
  request "r" {
    path = "/"
  }
}
`)
	for _, tt := range []struct {
		args []string
		at   string // where the VUs are set
	}{
		{[]string{"validate", "huge.hcl", "--var", "base_url=" + srv.URL}, "huge.hcl:8:"},
		{[]string{"plan", "huge.hcl", "--var", "base_url=" + srv.URL}, "huge.hcl:8:"},
		{[]string{"apply", "huge.hcl", "--var", "base_url=" + srv.URL}, "huge.hcl:8:"},
		{[]string{"validate", "rate.hcl"}, "rate.hcl:7:"},
		{[]string{"apply", "rate.hcl"}, "rate.hcl:7:"},
	} {
		args := tt.args
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			r := hload(t, dir, args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, want := range []string{
				"Error: Not enough memory for this test",
				"VUs at once",
				"of memory, and this machine has",
				"Error: Too many connections for the open-file limit",
				"the open-file limit (ulimit -n, RLIMIT_NOFILE) is",
				"the test is too large for this machine, at " + tt.at,
				"nothing was run",
			} {
				if !strings.Contains(unwrapped(r.stderr), want) {
					t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
				}
			}
			if args[0] != "apply" && r.stdout != "" {
				t.Errorf("stdout %q: want nothing printed for a refused test", r.stdout)
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "fatal error") {
				t.Errorf("the runtime crashed:\n%s", r.stderr)
			}
		})
	}
	if n := served.Load(); n != 0 {
		t.Errorf("the server received %d requests; want 0: nothing must be sent", n)
	}

	// Each machine of a run spread with --segment checks only its share.
	r := hload(t, dir, "validate", "--segment", "1/100000", "--var", "base_url="+srv.URL, "huge.hcl")
	if r.code != 0 {
		t.Errorf("validate --segment 1/100000 (100 VUs): exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestFaultTooLargeUnderAddressSpaceLimit: under a 4 GiB address-space limit
// (prlimit --as, as a container or a shared host may set), apply refuses
// 10,000,000 VUs with exit 2, naming the limit, and sends nothing; before
// the check it ran load for 25-30 s and then died in the Go runtime with
// "fatal error: out of memory".
func TestFaultTooLargeUnderAddressSpaceLimit(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) not found")
	}
	srv, served := okServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "huge.hcl", hugeTest)
	cmd := exec.Command(prlimit, "--as=4294967296", "--", hloadBin, "apply", "--var", "base_url="+srv.URL, "huge.hcl")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	r := wait(t, cmd, &stdout, &stderr)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"Error: Not enough address space for this test",
		"the address-space limit (ulimit -v, RLIMIT_AS) is 4 GiB, of which hload already takes",
		"nothing was run",
	} {
		if !strings.Contains(unwrapped(r.stderr), want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "fatal error") || strings.Contains(r.stderr, "goroutine ") {
		t.Errorf("the runtime crashed:\n%s", r.stderr)
	}
	if n := served.Load(); n != 0 {
		t.Errorf("the server received %d requests; want 0", n)
	}
}

// unwrapped joins the lines the diagnostic writer wrapped, so that a test
// can look for a phrase wherever it was cut.
func unwrapped(s string) string { return strings.Join(strings.Fields(s), " ") }
