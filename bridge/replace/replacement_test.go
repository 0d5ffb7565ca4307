package replace_test

import (
	"slices"
	"testing"

	"github.com/iasql/iasql/bridge/replace"
	"github.com/iasql/iasql/modules/module"
)

// mapper is a table's mapper; replace asks only what it implements.
type mapper struct{ module.Mapper }

// standIn derives a group's stand-in from its name, as aws_security_group does.
type standIn struct{ mapper }

func (standIn) Temporary(want module.Record, old string) module.Record {
	return module.Record{"name": "tmp-" + old, "description": want["description"]}
}

// TestStandInDance walks a replacement through a stand-in: temporary while
// the old resource exists, final once it is gone (observed, or deleted by
// the engine), done once nothing it retires is left.
func TestStandInDance(t *testing.T) {
	spec := module.Table{Name: "group", CloudID: []string{"name"}, Declarative: []string{"name", "description"}}
	if s := replace.StrategyFor(standIn{}, false); s != replace.StandIn {
		t.Fatalf("strategy %v, want StandIn", s)
	}
	rp, first := replace.Start(spec, standIn{}, "7", "web", module.Record{"name": "web", "description": "new"})
	if rp.Phase != replace.PhaseTemporary || rp.Temp != "tmp-web" || first.String("name") != "tmp-web" {
		t.Fatalf("start: %+v creating %v; want temporary through tmp-web", rp, first)
	}
	if stand := rp.Observe(true); stand != "tmp-web" || !rp.StandingIn() {
		t.Fatalf("old there: row stands for %q; want the stand-in", stand)
	}
	if got := rp.Retiring("tmp-web"); !slices.Equal(got, []string{"web"}) {
		t.Errorf("retiring %v while standing in; want the old resource", got)
	}
	if next, moved := rp.Deleted("tmp-web"); moved || next != replace.PhaseTemporary {
		t.Errorf("deleting the stand-in moved the phase to %s", next)
	}
	if next, moved := rp.Deleted("web"); !moved || next != replace.PhaseFinal {
		t.Errorf("deleting the old resource: %s, %v; want final", next, moved)
	}
	if rp.Done(false, false) {
		t.Error("done while the row still stands for the stand-in")
	}
	if stand := rp.Observe(false); stand != "" || !rp.Promote || rp.Phase != replace.PhaseFinal {
		t.Fatalf("old gone: stands for %q, %+v; want final, promoted", stand, rp)
	}
	if got := rp.Retiring("web"); !slices.Equal(got, []string{"tmp-web"}) {
		t.Errorf("retiring %v in final; want the stand-in", got)
	}
	if rp.Done(true, false) {
		t.Error("done while the stand-in is left in the cloud")
	}
	if !rp.Done(false, false) {
		t.Error("not done with nothing left")
	}
}

// TestStrategies: a generated identity is replaced at once under a new one
// (the create carries no identity); anything else is deleted, then created.
func TestStrategies(t *testing.T) {
	spec := module.Table{Name: "vpc", CloudID: []string{"vpc_id"}, Declarative: []string{"cidr"}, Feedback: []string{"vpc_id"}}
	if s := replace.StrategyFor(mapper{}, true); s != replace.NewIdentity {
		t.Fatalf("generated identity: strategy %v, want NewIdentity", s)
	}
	if s := replace.StrategyFor(mapper{}, false); s != replace.DeleteFirst {
		t.Fatalf("named identity: strategy %v, want DeleteFirst", s)
	}
	rp, first := replace.Start(spec, mapper{}, "3", "vpc-1", module.Record{"vpc_id": "vpc-1", "cidr": "10.1.0.0/16"})
	if rp.Phase != replace.PhaseFinal || rp.Temp != "" || first["vpc_id"] != nil || first.String("cidr") != "10.1.0.0/16" {
		t.Fatalf("start: %+v creating %v; want final, no identity", rp, first)
	}
	if stand := rp.Observe(true); stand != "" || rp.Promote {
		t.Errorf("final observes nothing: %q, %+v", stand, rp)
	}
	if got := rp.Retiring("vpc-2"); !slices.Equal(got, []string{"vpc-1"}) {
		t.Errorf("retiring %v; want the old VPC", got)
	}
	if !rp.Done(false, false) || rp.Done(true, false) {
		t.Error("done must follow what is left in the cloud")
	}
}

// deleteFirst is a mapper whose schema says delete_then_create.
type deleteFirst struct{ mapper }

func (deleteFirst) DeleteBeforeCreate() bool { return true }

// TestReplacementStrategy: a mapper that says its resources are deleted
// first is obeyed, even where the cloud generates identities.
func TestReplacementStrategy(t *testing.T) {
	if s := replace.StrategyFor(deleteFirst{}, true); s != replace.DeleteFirst {
		t.Errorf("delete_then_create with a generated identity: %v, want DeleteFirst", s)
	}
}
