package regional_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"

	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// The shape of an SDK's paginator: pages of items, options of its
// service.
type (
	options struct{}
	page    struct{ Items []string }
	// pager serves pages of a region's items; a page of fail fails.
	pager struct {
		pages [][]string
		next  int
		fail  int
	}
	// client is a region's client.
	client struct{ region string }
)

func (p *pager) HasMorePages() bool { return p.next < len(p.pages) }

func (p *pager) NextPage(ctx context.Context, _ ...func(*options)) (*page, error) {
	if p.next == p.fail {
		return nil, &smithy.GenericAPIError{Code: "AccessDenied"}
	}
	p.next++
	return &page{Items: p.pages[p.next-1]}, nil
}

func items(p *page) []string { return p.Items }

// TestPages: every page, in order, through items; the error of a page
// that fails.
func TestPages(t *testing.T) {
	cases := []struct {
		name  string
		pages [][]string
		fail  int
		want  []string
		err   bool
	}{
		{"none", nil, -1, nil, false},
		{"one page", [][]string{{"a", "b"}}, -1, []string{"a", "b"}, false},
		{"several, some empty", [][]string{{"a"}, {}, {"b", "c"}}, -1, []string{"a", "b", "c"}, false},
		{"a page fails", [][]string{{"a"}, {"b"}}, 1, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := regional.Pages(t.Context(), &pager{pages: tc.pages, fail: tc.fail}, items)
			if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
				t.Errorf("Pages = %v, %v; want %v (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestList: every region of the scope (the configuration's region without
// one), page by page, each item rendered in its region and those the
// record function leaves out dropped; a region whose page fails is left
// out and named, its error classified and saying what and where.
func TestList(t *testing.T) {
	byRegion := map[string][][]string{
		"us-east-1": {{"a", "skip"}, {"b"}},
		"eu-west-1": {{"c"}},
		"ap-east-1": {{"d"}},
	}
	c := regional.NewClients(aws.Config{Region: "ap-east-1"}, func(region string) *client { return &client{region: region} })
	list := func(s module.Scope, failing string) ([]module.Record, error) {
		return regional.List(t.Context(), c, s, module.TerminalCodes("AccessDenied"), "list things",
			func(cl *client) *pager {
				p := &pager{pages: byRegion[cl.region], fail: -1}
				if cl.region == failing {
					p.fail = 1
				}
				return p
			},
			items,
			func(region, item string) module.Record {
				if item == "skip" {
					return nil
				}
				return module.Record{"name": item, "region": region}
			})
	}
	names := func(recs []module.Record) []string {
		var out []string
		for _, r := range recs {
			out = append(out, r.String("region")+"/"+r.String("name"))
		}
		return out
	}
	scope := module.Scope{Regions: []string{"eu-west-1", "us-east-1"}, Default: "us-east-1"}
	cases := []struct {
		name    string
		scope   module.Scope
		failing string
		want    []string
		failed  []string
	}{
		{"the scope's regions, in order", scope, "", []string{"eu-west-1/c", "us-east-1/a", "us-east-1/b"}, nil},
		{"no scope: the configuration's region", module.Scope{}, "", []string{"ap-east-1/d"}, nil},
		{"a region fails", scope, "us-east-1", []string{"eu-west-1/c"}, []string{"us-east-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := list(tc.scope, tc.failing)
			if got := names(recs); !slices.Equal(got, tc.want) {
				t.Errorf("listed %v, want %v", got, tc.want)
			}
			failed, _ := module.FailedRegions(err)
			if got := slices.Sorted(maps.Keys(failed)); !slices.Equal(got, tc.failed) {
				t.Fatalf("failed regions %v (%v), want %v", got, err, tc.failed)
			}
			for region, rerr := range failed {
				var te *module.TerminalError
				if want := "list things in " + region + ": "; !errors.As(rerr, &te) || !strings.HasPrefix(rerr.Error(), want) {
					t.Errorf("%s failed with %v: want a terminal error saying %q", region, rerr, want)
				}
			}
		})
	}
}

// TestRecords: one record per item that has one, in the order of the
// items; the first error says nothing of the others.
func TestRecords(t *testing.T) {
	get := func(ctx context.Context, id string) (module.Record, error) {
		switch id {
		case "gone":
			return nil, nil
		case "bad":
			return nil, fmt.Errorf("read %s: boom", id)
		}
		return module.Record{"id": id}, nil
	}
	cases := []struct {
		name  string
		ids   []string
		limit int
		want  []string
		err   bool
	}{
		{"none", nil, 0, nil, false},
		{"in order", []string{"c", "a", "b"}, 0, []string{"c", "a", "b"}, false},
		{"absent left out", []string{"a", "gone", "b"}, 2, []string{"a", "b"}, false},
		{"one at a time", []string{"b", "a"}, 1, []string{"b", "a"}, false},
		{"an error", []string{"a", "bad"}, 0, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := regional.Records(t.Context(), tc.limit, tc.ids, get)
			var got []string
			for _, r := range recs {
				got = append(got, r.String("id"))
			}
			if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
				t.Errorf("Records = %v, %v; want %v (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestRegionOr: a row's region, else the scope's default, else the
// configuration's region.
func TestRegionOr(t *testing.T) {
	c := regional.NewClients(aws.Config{Region: "eu-north-1"}, func(region string) *client { return &client{region: region} })
	scope := module.Scope{Regions: []string{"eu-west-1", "us-east-1"}, Default: "us-east-1"}
	for _, tc := range []struct {
		name   string
		scope  module.Scope
		region string
		want   string
	}{
		{"the row's", scope, "eu-west-1", "eu-west-1"},
		{"the scope's default", scope, "", "us-east-1"},
		{"the configuration's", module.Scope{}, "", "eu-north-1"},
	} {
		if got := c.RegionOr(tc.scope, tc.region); got != tc.want {
			t.Errorf("%s: RegionOr = %q, want %q", tc.name, got, tc.want)
		}
	}
}
