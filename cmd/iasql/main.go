// Command iasql is the iasql sidecar: infrastructure as SQL, continuously.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/cmd/iasql/sidecar"
	iasqlsql "github.com/iasql/iasql/sql"
)

const usage = `iasql keeps a PostgreSQL database and the cloud in two-way sync.

Usage:
  iasql <command> [flags]

Commands:
  run       run the sidecar in the foreground (installs or upgrades the SQL objects)
  install   install or upgrade the SQL objects as plain SQL (no extension needed)
  uninstall remove what iasql put in the database (--module-tables, --roles: those too)
  status    show capture and sync health (--json); exits 1 when capture is not healthy, 2 when sync is not
  demo      start a throwaway PostgreSQL, the emulator and the sidecar with aws_s3 and aws_elb (and what
            aws_elb needs: aws_vpc, aws_security_group, aws_ec2); print how to connect and what to try
  emulator  serve an AWS-compatible endpoint (S3, EC2, ELBv2, IAM, ECR, STS, Cloud Control,
            CloudFormation DescribeType) for tests and demos

Run 'iasql <command> --help' for a command's flags and environment.
Flags: --help; --version prints the release and the version of the SQL objects it installs.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "--version", "version":
		fmt.Fprintf(stdout, "iasql %s (SQL objects %s)\n", version(), iasqlsql.Version)
		return 0
	case "run":
		if p := os.Getenv("IASQL_CPUPROFILE"); p != "" { // a pprof CPU profile until exit
			if f, perr := os.Create(p); perr == nil && pprof.StartCPUProfile(f) == nil {
				defer f.Close()
				defer pprof.StopCPUProfile()
			}
		}
		err = cmdRun(ctx, args[1:], stdout, stderr)
	case "install":
		err = cmdInstall(ctx, args[1:], stdout, stderr)
	case "uninstall":
		err = cmdUninstall(ctx, args[1:], stdout, stderr)
	case "status":
		err = cmdStatus(ctx, args[1:], stdout, stderr)
	case "demo":
		err = cmdDemo(ctx, args[1:], stdout, stderr)
	case "emulator":
		err = cmdEmulator(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "iasql: unknown command %q; run 'iasql --help' for the list\n", args[0])
		return 1
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintf(stderr, "iasql %s: %s\n", args[0], oneLine(err.Error()))
	var exit *exitError
	if errors.As(err, &exit) {
		return exit.code
	}
	return 1
}

var errUsage = errors.New("usage")

// exitError is a failure with an exit status other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// flags is a flag set whose every flag names its environment variable, with
// precedence flag > environment > default.
type flags struct {
	*flag.FlagSet
	env map[string]string // flag name -> env var
	cli map[string]bool   // flags given on the command line (not from the environment)
	// environment lists the other environment variables the command
	// reads (besides its flags' own), for --help.
	environment string
}

func newFlags(name, summary, examples string, stderr io.Writer) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &flags{FlagSet: fs, env: map[string]string{}}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: iasql %s [flags]\n\n%s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
		if f.environment != "" {
			fmt.Fprintf(fs.Output(), "\nEnvironment (besides each flag's own):\n%s", f.environment)
		}
		if examples != "" {
			fmt.Fprintf(fs.Output(), "\nExamples:\n%s\n", examples)
		}
	}
	return f
}

// The environment variables the binary reads besides its flags' own, by
// who reads them; --help names them (a test checks that every variable the
// source reads is named).
const (
	envPostgres = `  PGPASSWORD, PGPASSFILE, PGHOST, PGPORT, PGUSER, PGDATABASE, PGSSLMODE, PGSSLROOTCERT, PGSSLCERT,
  PGSSLKEY, PGCONNECT_TIMEOUT, PGAPPNAME, PGTARGETSESSIONATTRS, PGSERVICE, PGSERVICEFILE
            libpq's variables, for what --dsn leaves out (the password belongs here or in ~/.pgpass)
`
	envAWS = `  AWS_REGION, AWS_DEFAULT_REGION
            the default region of the SDK's clients
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_CONFIG_FILE,
  AWS_SHARED_CREDENTIALS_FILE, AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_SESSION_NAME
            credentials: the SDK's standard chain (then ~/.aws, ECS and EC2 instance roles)
  AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_EC2, AWS_ENDPOINT_URL_IAM,
  AWS_ENDPOINT_URL_ECR, AWS_ENDPOINT_URL_STS
            an AWS-compatible endpoint instead of AWS's (all services, or one)
  AWS_CA_BUNDLE, AWS_MAX_ATTEMPTS, AWS_RETRY_MODE, AWS_USE_FIPS_ENDPOINT, AWS_USE_DUALSTACK_ENDPOINT
            and the SDK's other AWS_* settings (aws-sdk-go-v2's config package)
`
	envModules = `  IASQL_S3_PATH_STYLE      true|false: address S3 path-style (default: true with a custom endpoint)
  IASQL_S3_DETAIL_TTL      automatic cycles reuse S3 versioning and object listings read within it (default 5m)
  IASQL_IAM_DETAIL_TTL     automatic cycles reuse IAM role policies read within it (default 5m)
  IASQL_EC2_DETAIL_TTL     automatic cycles reuse EC2 instances' user data read within it (default 5m)
  IASQL_CC_DETAIL_TTL      automatic cycles reuse Cloud Control resource details read within it (default 5m)
  IASQL_CC_RATE            Cloud Control requests a second, shared by every resource type's calls and polls (default 25)
  IASQL_CC_BUDGET          Cloud Control calls a scheduled cycle with nothing to act on spends reading the types (default 25; 0: no limit)
  IASQL_DETAIL_BUDGET      stale details refreshed per table per automatic cycle (default 1000)
`
	envProfile = `  IASQL_CPUPROFILE         write a pprof CPU profile of the run to this file until exit
`
)

func (f *flags) String(name, env, def, help string) *string {
	if env != "" {
		f.env[name] = env
		help += " (env " + env + ")"
	}
	return f.FlagSet.String(name, def, help)
}

func (f *flags) Bool(name, env string, def bool, help string) *bool {
	if env != "" {
		f.env[name] = env
		help += " (env " + env + ")"
	}
	return f.FlagSet.Bool(name, def, help)
}

func (f *flags) parse(args []string) error {
	f.SetOutput(f.Output())
	if err := f.FlagSet.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if f.NArg() > 0 {
		fmt.Fprintf(f.Output(), "unexpected argument %q\n", f.Arg(0))
		f.Usage()
		return errUsage
	}
	set := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	f.cli = set
	for name, env := range f.env {
		if v, ok := os.LookupEnv(env); ok && !set[name] {
			if err := f.Set(name, v); err != nil {
				return fmt.Errorf("environment %s: %w", env, err)
			}
		}
	}
	return nil
}

// dsnFlags adds --dsn and --dsn-file and returns the connection string
// they give. A password given on the command line is visible to every user
// of the machine (ps): it is taken, with a warning that says where to put
// it instead.
func dsnFlags(f *flags, stderr io.Writer) func() (string, error) {
	dsn := f.String("dsn", "IASQL_DSN", "", dsnHelp)
	file := f.String("dsn-file", "IASQL_DSN_FILE", "", "file holding the connection string (keeps its password out of ps)")
	return func() (string, error) {
		if *file != "" {
			if *dsn != "" {
				return "", errors.New("give --dsn or --dsn-file, not both")
			}
			b, err := os.ReadFile(*file)
			if err != nil {
				return "", fmt.Errorf("read --dsn-file: %w", err)
			}
			return strings.TrimSpace(string(b)), nil
		}
		if f.cli["dsn"] && dsnHasPassword(*dsn) {
			fmt.Fprintln(stderr, "warning: the password in --dsn is visible to every user of this machine (ps); put it in PGPASSWORD, ~/.pgpass, IASQL_DSN or --dsn-file instead")
		}
		return *dsn, nil
	}
}

// parseAndConnect parses a command's flags and connects to the database
// its --dsn or --dsn-file names (install, status, uninstall).
func parseAndConnect(ctx context.Context, f *flags, args []string, dsnOf func() (string, error)) (*pgx.Conn, error) {
	if err := f.parse(args); err != nil {
		return nil, err
	}
	dsn, err := dsnOf()
	if err != nil {
		return nil, err
	}
	return sidecar.Connect(ctx, dsn)
}

// dsnHasPassword reports whether a connection string (URL or key=value
// form) carries a password.
func dsnHasPassword(dsn string) bool {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		_, ok := u.User.Password()
		return ok
	}
	for _, kv := range strings.Fields(dsn) {
		if k, _, ok := strings.Cut(kv, "="); ok && strings.TrimSpace(k) == "password" {
			return true
		}
	}
	return false
}

// logValues writes durations as Go prints them (1.5s, 2m0s) in both
// formats (the JSON handler would write nanoseconds), and errors and
// strings of several lines (errors.Join, a server's DETAIL) as one line,
// their lines joined with "; ", so that one record is one line a reader
// can follow (the text handler would write "\n" escapes).
func logValues(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindDuration:
		a.Value = slog.StringValue(a.Value.Duration().String())
	case slog.KindString:
		if s := a.Value.String(); strings.ContainsAny(s, "\r\n") {
			a.Value = slog.StringValue(joinLines(s))
		}
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok && err != nil {
			a.Value = slog.StringValue(joinLines(err.Error()))
		}
	}
	return a
}

// joinLines is s with its lines trimmed, the empty ones dropped, and the
// rest joined with "; ".
func joinLines(s string) string {
	var out []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

// logFlags adds --log-level and --log-format and returns a builder.
func logFlags(f *flags, stderr io.Writer) func() (*slog.Logger, error) {
	level := f.String("log-level", "IASQL_LOG_LEVEL", "info", "log level: debug, info, warn, error")
	format := f.String("log-format", "IASQL_LOG_FORMAT", "text", "log format: text or json")
	return func() (*slog.Logger, error) {
		var l slog.Level
		if err := l.UnmarshalText([]byte(*level)); err != nil {
			return nil, fmt.Errorf("invalid --log-level %q: use debug, info, warn or error", *level)
		}
		opts := &slog.HandlerOptions{Level: l, ReplaceAttr: logValues}
		switch *format {
		case "text":
			return slog.New(slog.NewTextHandler(stderr, opts)), nil
		case "json":
			return slog.New(slog.NewJSONHandler(stderr, opts)), nil
		}
		return nil, fmt.Errorf("invalid --log-format %q: use text or json", *format)
	}
}
