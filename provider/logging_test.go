package provider

import (
	"os"
	"testing"
)

// Without any request for logs the SDK loggers are turned off; any TF_LOG* variable (or the
// test harness's) leaves them alone.
func TestQuietSDKLogs(t *testing.T) {
	reset := func() {
		for _, v := range logEnvVars {
			t.Setenv(v, "")
		}
	}
	reset()
	quietSDKLogs()
	for _, v := range sdkLogLevelVars {
		if got := os.Getenv(v); got != "OFF" {
			t.Errorf("no logs asked for: %s = %q, want OFF", v, got)
		}
	}
	for _, asked := range logEnvVars {
		reset()
		t.Setenv(asked, "DEBUG")
		quietSDKLogs()
		for _, v := range sdkLogLevelVars {
			if v != asked && os.Getenv(v) != "" {
				t.Errorf("%s set: %s = %q, want it untouched", asked, v, os.Getenv(v))
			}
		}
	}
}
