package provider

import "os"

// The plugin SDKs (terraform-plugin-go's proto logger, terraform-plugin-framework's logger)
// log every request at TRACE unless an environment variable lowers their level: dozens of
// JSON lines per resource and RPC, formatted and written by the provider and read and parsed
// by Terraform, which then throws them away unless TF_LOG or TF_LOG_PROVIDER asks for
// provider logs. On a 100-resource plan that is most of the provider's CPU time.
//
// quietSDKLogs turns the SDK loggers off when nobody asked for logs: no TF_LOG*, and none of
// the variables the SDKs and the acceptance test harness read. What Terraform shows is the
// same (nothing); when any of them is set, nothing changes. The provider's own logs (tflog)
// are untouched.
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
