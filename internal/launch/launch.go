// Package launch starts child processes of the tests, the demo's checks and
// the benchmark (the iasql binary above all) with an environment that keeps
// them on loopback: the emulator's endpoint, static test credentials, no
// shared configuration or profile, and the EC2 instance metadata service
// disabled, whatever AWS settings the parent has. Every place that starts
// the binary goes through Command (a test in this package checks it), so a
// child never reaches AWS with a developer's real credentials, nor probes
// the instance metadata service, which the SDK's default credential chain
// does when it finds no other credentials.
package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// NoCloud is the endpoint of a child that is not meant to call AWS at all
// (capture only, --help, status): a loopback port nothing listens on, so
// that a call it makes after all fails at once, on this machine.
const NoCloud = "http://127.0.0.1:9"

// Env is base (os.Environ()) with every AWS_ variable removed and the
// settings that keep a child's AWS calls on endpoint added (NoCloud when
// endpoint is ""): AWS_ENDPOINT_URL, the region us-east-1, the static
// credentials test/test the emulator accepts, /dev/null for the shared
// config and credentials files, and AWS_EC2_METADATA_DISABLED=true (the
// SDK's switch for the instance metadata service:
// https://docs.aws.amazon.com/sdkref/latest/guide/feature-imds-client.html).
// Settings a caller appends after these win (exec.Cmd keeps the last).
func Env(base []string, endpoint string) []string {
	if endpoint == "" {
		endpoint = NoCloud
	}
	out := make([]string, 0, len(base)+len(Settings(endpoint)))
	for _, kv := range base {
		if !strings.HasPrefix(kv, "AWS_") {
			out = append(out, kv)
		}
	}
	return append(out, Settings(endpoint)...)
}

// Settings are the variables Env adds, as NAME=value.
func Settings(endpoint string) []string {
	return []string{
		"AWS_ENDPOINT_URL=" + endpoint,
		"AWS_REGION=us-east-1",
		"AWS_DEFAULT_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// Command is exec.CommandContext(ctx, name, args...) with the environment
// Env(os.Environ(), endpoint). Add to cmd.Env, never replace it.
func Command(ctx context.Context, endpoint, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = Env(os.Environ(), endpoint)
	return cmd
}

// Binary is the iasql binary children run: IASQL_BIN (make test and make
// bench set it to bin/iasql), else one built now into dir.
func Binary(dir string) (string, error) {
	if p := os.Getenv("IASQL_BIN"); p != "" {
		return p, nil
	}
	bin := filepath.Join(dir, "iasql")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/iasql/iasql/cmd/iasql").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build iasql (or set IASQL_BIN): %w: %s", err, out)
	}
	return bin, nil
}
