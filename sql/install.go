// Package sql holds the SQL source of every object iasql puts in a database
// and installs it: as the iasql extension where the server has it, or as
// plain SQL for managed databases that allow no custom extensions.
package sql

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Version is the version of the SQL objects this build ships.
const Version = "0.1.0"

// ExtensionName is the PostgreSQL extension that packages these objects.
const ExtensionName = "iasql"

//go:embed [0-9]*.sql extension_only.sql
var files embed.FS

//go:embed upgrades
var upgrades embed.FS

// InstallLockKey serialises concurrent first installs (two sidecars
// starting on a database without iasql); once installed, installs and
// upgrades lock the install lock's row instead (LockInstall).
const InstallLockKey = 1767994225

// LockInstall serialises installs and upgrades (two sidecars starting, an
// administrator's iasql install) for the transaction: with the row of lock
// 5 in iasql_private.iasql_locks (sql/006_locks.sql), which only the
// installing and the sidecar's roles may lock, where it exists and this
// role may; else (no iasql yet) with an advisory lock, which any role
// could hold, but nothing is there yet to stall.
func LockInstall(ctx context.Context, tx pgx.Tx) error {
	var row bool
	if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT pg_catalog.has_table_privilege(c.oid, 'UPDATE') FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'iasql_private' AND c.relname = 'iasql_locks'), false)`).Scan(&row); err != nil {
		return fmt.Errorf("lock for install: %w", err)
	}
	var err error
	if row {
		_, err = tx.Exec(ctx, `SELECT 1 FROM iasql_private.iasql_locks WHERE lock_id = 5 FOR UPDATE`)
	} else {
		_, err = tx.Exec(ctx, `SELECT pg_catalog.pg_advisory_xact_lock($1)`, InstallLockKey)
	}
	if err != nil {
		return fmt.Errorf("lock for install: %w", err)
	}
	return nil
}

// Script returns the plain-SQL install script of the current version: the
// numbered files of this folder in order.
func Script() string {
	names, _ := fs.Glob(files, "[0-9]*.sql")
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		body, _ := files.ReadFile(n)
		fmt.Fprintf(&b, "-- %s\n%s\n", n, body)
	}
	return b.String()
}

// ExtensionScript returns the extension's install script for Version.
func ExtensionScript() string {
	extra, _ := files.ReadFile("extension_only.sql")
	return extensionGuard + Script() + "-- extension_only.sql\n" + string(extra)
}

// ExtensionFiles returns the files of extension/ generated from this folder:
// the install script of Version and every upgrade script, by file name.
func ExtensionFiles() map[string]string {
	out := scripts()
	out[ExtensionName+".control"] = control()
	return out
}

// scripts are the install and upgrade scripts of extension/, by file name.
func scripts() map[string]string {
	out := map[string]string{"iasql--" + Version + ".sql": ExtensionScript()}
	entries, _ := upgrades.ReadDir("upgrades")
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".sql")
		if a, b, ok := strings.Cut(name, "--"); ok {
			body, _ := Upgrade(a, b)
			out["iasql--"+name+".sql"] = extensionGuard + body
		}
	}
	return out
}

// controlComment is the extension's comment (pg_available_extensions),
// which ends with the fingerprint of the files it was made with (Build).
const controlComment = "iasql: audit trail, capture registry and procedures for two-way sync of tables with the cloud"

func control() string {
	return "# iasql: infrastructure as SQL, continuously (generated from sql/ by 'make extension'; do not edit)\n" +
		"comment = '" + controlComment + " (build " + Build() + ")'\n" +
		"default_version = '" + Version + "'\n" +
		"relocatable = false\n" +
		"schema = public\n" +
		"superuser = false\n"
}

// Build fingerprints this binary's SQL: the first 12 hex digits of the
// SHA-256 of the install script and the upgrade scripts. The extension's
// files carry it (control), so a server whose files of this Version were
// made from other SQL (a development build) is not taken to have them:
// the objects are installed as plain SQL instead.
func Build() string {
	h := sha256.New()
	files := scripts()
	names := slices.Sorted(maps.Keys(files))
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte(files[n]))
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

const extensionGuard = "-- Generated from sql/ by 'make extension'; do not edit.\n" +
	"\\echo Use \"CREATE EXTENSION iasql\" to load this file. \\quit\n\n"

// Upgrade returns the upgrade script from one version to the next, as
// extension/iasql--FROM--TO.sql ships it, or false when there is none.
func Upgrade(from, to string) (string, bool) {
	b, err := upgrades.ReadFile("upgrades/" + from + "--" + to + ".sql")
	if err != nil {
		return "", false
	}
	return string(b), true
}

// Installed describes what a database holds.
type Installed struct {
	Version   string // "" when nothing is installed
	Extension bool   // installed with CREATE EXTENSION
	Available bool   // the server has the extension files for Version, made from this binary's SQL (Build)
}

// Detect reports which version of the objects a database holds and how.
func Detect(ctx context.Context, conn *pgx.Conn) (Installed, error) {
	var in Installed
	err := conn.QueryRow(ctx, `
		SELECT coalesce((SELECT extversion FROM pg_catalog.pg_extension WHERE extname = $1), ''),
		       EXISTS (SELECT 1 FROM pg_catalog.pg_available_extension_versions WHERE name = $1 AND version = $2
		                 AND comment LIKE '%(build ' || $3 || ')')`,
		ExtensionName, Version, Build()).Scan(&in.Version, &in.Available)
	if err != nil {
		return in, fmt.Errorf("detect installed iasql objects: %w", err)
	}
	if in.Version != "" {
		in.Extension = true
		return in, nil
	}
	var has bool
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.to_regproc('public.iasql_version') IS NOT NULL`).Scan(&has); err != nil {
		return in, fmt.Errorf("detect installed iasql objects: %w", err)
	}
	if has {
		if err := conn.QueryRow(ctx, `SELECT public.iasql_version()`).Scan(&in.Version); err != nil {
			return in, fmt.Errorf("read installed iasql version: %w", err)
		}
	}
	return in, nil
}

// ErrNewer means the database holds objects newer than this build.
var ErrNewer = errors.New("the database holds newer iasql objects than this binary")

// Ensure installs the objects when missing and upgrades them when older. It
// uses the extension when the server has it (preferExtension), else plain
// SQL. It reports what it did ("" when nothing was needed).
func Ensure(ctx context.Context, conn *pgx.Conn, preferExtension bool) (string, error) {
	var did string
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := LockInstall(ctx, tx); err != nil {
			return err
		}
		in, err := Detect(ctx, tx.Conn())
		if err != nil {
			return err
		}
		switch {
		case in.Version == Version:
			return nil
		case in.Version != "" && compareVersions(in.Version, Version) > 0:
			return fmt.Errorf("%w (database %s, binary %s): run a newer iasql", ErrNewer, in.Version, Version)
		case in.Extension:
			if _, err := tx.Exec(ctx, `ALTER EXTENSION iasql UPDATE TO '`+Version+`'`); err != nil {
				return fmt.Errorf("upgrade extension iasql %s to %s: %w", in.Version, Version, err)
			}
			did = fmt.Sprintf("upgraded extension iasql %s -> %s", in.Version, Version)
		case in.Version == "" && preferExtension && in.Available:
			if _, err := tx.Exec(ctx, `CREATE EXTENSION iasql VERSION '`+Version+`'`); err != nil {
				return fmt.Errorf("create extension iasql: %w", err)
			}
			did = "created extension iasql " + Version
		default:
			d, err := installPlain(ctx, tx, in.Version)
			if err != nil {
				return err
			}
			did = d
		}
		return nil
	})
	return did, err
}

// InstallPlain installs or upgrades the objects as plain SQL (no extension).
func InstallPlain(ctx context.Context, conn *pgx.Conn) (string, error) {
	did, _, err := InstallPlainFor(ctx, conn, "")
	return did, err
}

// InstallPlainFor installs or upgrades the objects as plain SQL, as
// InstallPlain does, and when sidecarRole is not "" makes that role the
// sidecar's (iasql_grant_sidecar) in the same transaction: if the role
// cannot be given what it needs, nothing is installed either. It returns
// what it did ("" when nothing was needed) and what the grant said.
func InstallPlainFor(ctx context.Context, conn *pgx.Conn, sidecarRole string) (did, granted string, err error) {
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := LockInstall(ctx, tx); err != nil {
			return err
		}
		in, err := Detect(ctx, tx.Conn())
		if err != nil {
			return err
		}
		if in.Extension {
			return fmt.Errorf("iasql %s is installed as an extension here: upgrade it with ALTER EXTENSION iasql UPDATE (or 'iasql run', which does)", in.Version)
		}
		if in.Version != "" && compareVersions(in.Version, Version) > 0 {
			return fmt.Errorf("%w (database %s, binary %s): run a newer iasql", ErrNewer, in.Version, Version)
		}
		if did, err = installPlain(ctx, tx, in.Version); err != nil || sidecarRole == "" {
			return err
		}
		if granted, err = GrantSidecar(ctx, tx, sidecarRole); err != nil && did != "" {
			return fmt.Errorf("%w; so iasql %s was not installed either", err, Version)
		}
		return err
	})
	if err != nil {
		did, granted = "", ""
	}
	return did, granted, err
}

// GrantSidecar makes role the sidecar's and grants it what the sidecar
// needs (iasql_grant_sidecar), reporting what it said. The function checks
// first what the calling role lacks, and then changes nothing.
func GrantSidecar(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, role string) (string, error) {
	var said string
	if err := q.QueryRow(ctx, `SELECT public.iasql_grant_sidecar($1)`, role).Scan(&said); err != nil {
		return "", fmt.Errorf("make role %s the iasql sidecar's: %w", role, err)
	}
	return said, nil
}

func installPlain(ctx context.Context, tx pgx.Tx, from string) (string, error) {
	if from == Version {
		return "", nil
	}
	if from == "" {
		if _, err := tx.Exec(ctx, Script()); err != nil {
			return "", fmt.Errorf("install iasql %s: %w", Version, err)
		}
		return "installed iasql " + Version, nil
	}
	for v := from; v != Version; {
		next, script, ok := nextUpgrade(v)
		if !ok {
			return "", fmt.Errorf("no upgrade path from iasql %s to %s: reinstall into a fresh database", from, Version)
		}
		if _, err := tx.Exec(ctx, script); err != nil {
			return "", fmt.Errorf("upgrade iasql %s to %s: %w", v, next, err)
		}
		v = next
	}
	return fmt.Sprintf("upgraded iasql %s -> %s", from, Version), nil
}

func nextUpgrade(from string) (string, string, bool) {
	entries, _ := upgrades.ReadDir("upgrades")
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".sql")
		a, b, ok := strings.Cut(name, "--")
		if ok && a == from {
			s, _ := Upgrade(a, b)
			return b, s, true
		}
	}
	return "", "", false
}

// compareVersions compares dotted numeric versions.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			fmt.Sscan(pa[i], &x)
		}
		if i < len(pb) {
			fmt.Sscan(pb[i], &y)
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

//go:embed uninstall.sql
var uninstallScript string

// UninstallScript returns the block 'iasql uninstall' runs to remove the
// objects of this folder (and the extension) from a database: see
// uninstall.sql.
func UninstallScript() string { return uninstallScript }
