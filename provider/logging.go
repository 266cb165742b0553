package provider

import "os"

// quietSDKLogs turns the plugin SDKs' loggers off when no TF_LOG* (or other variable the SDKs and
// the test harness read) asks for logs: they log every request at TRACE, and on a 100-resource
// plan formatting lines Terraform then discards is most of the provider's CPU. Nothing visible
// changes; the provider's own tflog logs are untouched.
func quietSDKLogs() {
	for _, v := range logEnvVars {
		if os.Getenv(v) != "" {
			return
		}
	}
	for _, v := range sdkLogLevelVars {
		_ = os.Setenv(v, "OFF")
	}
}

// logEnvVars are the variables that ask for provider or SDK logs (Terraform's, the SDKs',
// terraform-plugin-testing's).
var logEnvVars = []string{
	"TF_LOG", "TF_LOG_PROVIDER", "TF_LOG_PROVIDER_GANTRY",
	"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK",
	"TF_ACC_LOG_PATH", "TF_LOG_PATH_MASK",
}

// sdkLogLevelVars set the levels of the SDK root logger and its proto and framework subsystems.
var sdkLogLevelVars = []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK"}
