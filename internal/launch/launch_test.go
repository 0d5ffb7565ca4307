package launch_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iasql/iasql/internal/launch"
)

// TestEnvKeepsChildrenLocal: whatever AWS settings the parent has (a
// profile, real keys, another endpoint, a container or web identity role,
// the metadata service enabled), a child gets the emulator's endpoint,
// the static test credentials and the metadata service disabled, and
// keeps the rest of the environment.
func TestEnvKeepsChildrenLocal(t *testing.T) {
	parent := []string{"PATH=/usr/bin", "HOME=/home/dev", "AWS_PROFILE=production", "AWS_ACCESS_KEY_ID=AKIAREAL",
		"AWS_SECRET_ACCESS_KEY=real", "AWS_SESSION_TOKEN=real", "AWS_ENDPOINT_URL_S3=https://s3.amazonaws.com",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI=http://169.254.170.23/v1/credentials", "AWS_ROLE_ARN=arn:aws:iam::1:role/r",
		"AWS_WEB_IDENTITY_TOKEN_FILE=/var/token", "AWS_EC2_METADATA_DISABLED=false", "AWS_REGION=eu-west-1"}
	for _, tc := range []struct{ endpoint, want string }{
		{"http://127.0.0.1:4566", "http://127.0.0.1:4566"},
		{"", launch.NoCloud},
	} {
		env := launch.Env(parent, tc.endpoint)
		got := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			if _, dup := got[k]; dup {
				t.Errorf("%s is set twice", k)
			}
			got[k] = v
		}
		want := map[string]string{"PATH": "/usr/bin", "HOME": "/home/dev", "AWS_ENDPOINT_URL": tc.want, "AWS_REGION": "us-east-1",
			"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
			"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_EC2_METADATA_DISABLED": "true"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("endpoint %q: %s=%q, want %q", tc.endpoint, k, got[k], v)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("endpoint %q: the child inherits %s=%s", tc.endpoint, k, got[k])
			}
		}
	}
	cmd := launch.Command(t.Context(), "http://127.0.0.1:1234", "iasql", "run")
	if !slices.Contains(cmd.Env, "AWS_EC2_METADATA_DISABLED=true") || !slices.Contains(cmd.Env, "AWS_ENDPOINT_URL=http://127.0.0.1:1234") {
		t.Errorf("Command's environment lacks the settings: %v", cmd.Env)
	}
}

// local are the programs started other than through Command, which never
// call AWS: the Go tool, shells of fixed scripts, and PostgreSQL's own
// programs (by the expression that names them where they are started).
var local = map[string]bool{
	`"go"`: true, `"make"`: true, "pgConfig": true, "b.pgbench": true, "b.recvlogical": true,
}

// TestEveryLauncherUsesCommand: every exec.Command and exec.CommandContext
// in the module starts a program that never calls AWS (a literal name
// other than a shell's, a PostgreSQL program by its path, or one of
// local); anything else (the iasql binary, in tests and the benchmark; a
// shell running the README's recipes) is started through launch.Command,
// which gives it the loopback settings. (The demo runs its sidecar in
// process, with the emulator's static configuration.)
func TestEveryLauncherUsesCommand(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".bench" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.Contains(path, filepath.Join("internal", "launch")) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(node ast.Node) bool {
			call, ok := node.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok || pkg.Name != "exec" || (sel.Sel.Name != "Command" && sel.Sel.Name != "CommandContext") {
				return true
			}
			n++
			i := 0
			if sel.Sel.Name == "CommandContext" {
				i = 1
			}
			if len(call.Args) <= i || !startsLocal(call.Args[i]) {
				t.Errorf("%s: %s starts a program other than through launch.Command: it would inherit the parent's AWS settings",
					fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("found no exec.Command at all: the walk looked in the wrong place")
	}
}

// startsLocal reports whether the program expression names a program that
// never calls AWS.
func startsLocal(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.BasicLit:
		// A shell runs whatever it is given (the README's recipes).
		return x.Value != `"iasql"` && x.Value != `"sh"` && x.Value != `"bash"`
	case *ast.CallExpr:
		// c.Bin("initdb") (pgcluster), filepath.Join(dir, "pg_config"): a
		// PostgreSQL program.
		if types(x.Fun) == "c.Bin" {
			return true
		}
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Join" && len(x.Args) > 0 {
			last, ok := x.Args[len(x.Args)-1].(*ast.BasicLit)
			return ok && !strings.Contains(last.Value, "iasql")
		}
	}
	return local[types(e)]
}

// types renders a short expression (an identifier or a selector).
func types(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return types(x.X) + "." + x.Sel.Name
	case *ast.BasicLit:
		return x.Value
	}
	return ""
}
