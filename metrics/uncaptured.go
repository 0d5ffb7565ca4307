package metrics

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/logical"
)

// MaxUncapturedPeek bounds the messages Uncaptured reads from the slot, so
// that status stays quick over a large backlog; past it the count is a
// lower bound.
const MaxUncapturedPeek = 100000

// Uncaptured is what the slot holds that capture has not recorded yet.
type Uncaptured struct {
	// Changes are the users' changes (INSERT, UPDATE, DELETE; a TRUNCATE
	// counts one) to installed module tables committed after the last
	// captured transaction: pending, though iasql_status, which reads the
	// audit trail, does not show them yet.
	Changes int64 `json:"changes"`
	// AtLeast says that the slot holds more than was read
	// (MaxUncapturedPeek messages): Changes is a lower bound.
	AtLeast bool `json:"at_least,omitempty"`
}

// ReadUncaptured counts the changes to installed module tables that the
// slot holds and capture has not recorded (committed after h.CapturedLSN).
// It reads them with pg_logical_slot_peek_binary_changes, which leaves the
// slot as it is, so only while no sidecar streams from the slot (a slot
// serves one consumer at a time; while one does, what it holds is being
// captured: h.Slot.LagBytes shows how far behind), and only for a role
// with REPLICATION (or a superuser). It returns nil, nil when the slot is
// missing, lost or streamed from; a role that may not read it gets an
// error it can show.
//
// A transaction the engine marked as its own (a transactional message with
// the prefix iasql_engine, as capture reads it) is not counted.
func ReadUncaptured(ctx context.Context, conn *pgx.Conn, h *Health) (*Uncaptured, error) {
	if !h.Slot.Exists || h.Slot.Active || h.Slot.WALStatus == "lost" || h.Version == "" {
		return nil, nil
	}
	captured := h.captured
	modules := map[string]bool{}
	tables, err := store.InstalledTables(ctx, conn)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		modules[t] = true
	}
	out := &Uncaptured{}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// A backlog of gigabytes must not hold status (nor the slot) long.
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '10s'`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT data FROM pg_catalog.pg_logical_slot_peek_binary_changes($1, NULL, $2,
			'proto_version', '1', 'publication_names', $3, 'messages', 'true')`, h.Slot.Name, MaxUncapturedPeek, logical.Publication)
		if err != nil {
			return err
		}
		defer rows.Close()
		relations := map[uint32]bool{} // relation ids of module tables
		var n, inTx int64
		change := func(rel uint32) {
			if relations[rel] {
				inTx++
			}
		}
		var skip, engine bool
		for rows.Next() {
			var data []byte
			if err := rows.Scan(&data); err != nil {
				return err
			}
			n++
			msg, err := pglogrepl.Parse(data)
			if err != nil {
				return fmt.Errorf("decode the slot's message: %w", err)
			}
			switch m := msg.(type) {
			case *pglogrepl.BeginMessage:
				skip, engine, inTx = m.FinalLSN <= captured, false, 0
			case *pglogrepl.RelationMessage:
				rel := m.RelationName
				if m.Namespace != "public" {
					rel = m.Namespace + "." + rel
				}
				if modules[rel] {
					relations[m.RelationID] = true
				}
			case *pglogrepl.LogicalDecodingMessage:
				if m.Transactional && m.Prefix == logical.EngineMessagePrefix {
					engine = true
				}
			case *pglogrepl.InsertMessage:
				change(m.RelationID)
			case *pglogrepl.UpdateMessage:
				change(m.RelationID)
			case *pglogrepl.DeleteMessage:
				change(m.RelationID)
			case *pglogrepl.TruncateMessage:
				for _, rel := range m.RelationIDs {
					change(rel)
				}
			case *pglogrepl.CommitMessage:
				if !skip && !engine {
					out.Changes += inTx
				}
				inTx = 0
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		out.AtLeast = n >= MaxUncapturedPeek
		return nil
	})
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "55006":
		// A sidecar started streaming meanwhile: it is capturing them.
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read what slot %s holds: %w", h.Slot.Name, err)
	}
	return out, nil
}
