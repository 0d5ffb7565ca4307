package emulator

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

type ec2Tag struct{ key, value string }

// ec2Tags are a resource's tags, sorted by key.
type ec2Tags []ec2Tag

func (t ec2Tags) find(key string) (int, bool) {
	return slices.BinarySearchFunc(t, key, func(tag ec2Tag, k string) int { return strings.Compare(tag.key, k) })
}

func (t ec2Tags) get(key string) (string, bool) {
	if i, ok := t.find(key); ok {
		return t[i].value, true
	}
	return "", false
}

func (t *ec2Tags) set(key, value string) {
	i, ok := t.find(key)
	if ok {
		(*t)[i].value = value
		return
	}
	*t = slices.Insert(*t, i, ec2Tag{key, value})
}

func (t *ec2Tags) del(key string) {
	if i, ok := t.find(key); ok {
		*t = slices.Delete(*t, i, i+1)
	}
}

// write writes the tagSet element, none when there are no tags.
func (t ec2Tags) write(x *ec2XML) {
	if len(t) == 0 {
		return
	}
	x.open("tagSet")
	for _, tag := range t {
		x.open("item")
		x.str("key", tag.key)
		x.str("value", tag.value)
		x.close("item")
	}
	x.close("tagSet")
}

// ec2ParseTags reads a list of tags (prefix.N.Key, prefix.N.Value).
func ec2ParseTags(p ec2Params, prefix string) (ec2Tags, error) {
	var tags ec2Tags
	for _, m := range p.members(prefix) {
		key, value := p.Get(m+".Key"), p.Get(m+".Value")
		if err := ec2ValidTag(key, value); err != nil {
			return nil, err
		}
		tags.set(key, value)
	}
	if len(tags) > ec2MaxTags {
		return nil, ec2Errorf("TagLimitExceeded", "The maximum number of tags per resource is %d", ec2MaxTags)
	}
	return tags, nil
}

func ec2ValidTag(key, value string) error {
	switch {
	case key == "":
		return ec2Errorf("InvalidParameterValue", "Tag keys must not be empty")
	case utf8.RuneCountInString(key) > 128:
		return ec2Errorf("InvalidParameterValue", "Tag key exceeds the maximum length of 128 characters: %s", key)
	case utf8.RuneCountInString(value) > 256:
		return ec2Errorf("InvalidParameterValue", "Tag value exceeds the maximum length of 256 characters: %s", value)
	case awsOwnTag(key):
		return ec2Errorf("InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
	}
	return nil
}

// ec2TagSpecifications reads the tags a Create action puts on the resource
// of type resourceType (TagSpecification.N.ResourceType, .Tag.M.Key, ...).
func ec2TagSpecifications(p ec2Params, resourceType string) (ec2Tags, error) {
	var tags ec2Tags
	for _, m := range p.members("TagSpecification") {
		if rt := p.Get(m + ".ResourceType"); rt != resourceType {
			return nil, ec2Errorf("InvalidParameterValue",
				"'%s' is not a valid taggable resource type for this operation.", rt)
		}
		more, err := ec2ParseTags(p, m+".Tag")
		if err != nil {
			return nil, err
		}
		for _, t := range more {
			tags.set(t.key, t.value)
		}
	}
	if len(tags) > ec2MaxTags {
		return nil, ec2Errorf("TagLimitExceeded", "The maximum number of tags per resource is %d", ec2MaxTags)
	}
	return tags, nil
}

// tagsOf returns the tags of the resource with id, or the resource type's
// not-found error.
func (rg *ec2Region) tagsOf(id string) (*ec2Tags, error) {
	kind, _, _ := strings.Cut(id, "-")
	switch kind {
	case rg.vpcs.kind:
		return rg.vpcs.tagsOf(id)
	case rg.subnets.kind:
		return rg.subnets.tagsOf(id)
	case rg.groups.kind:
		return rg.groups.tagsOf(id)
	case rg.rules.kind:
		return rg.rules.tagsOf(id)
	case rg.instances.kind:
		return rg.instances.tagsOf(id)
	}
	return nil, ec2Errorf("InvalidID", "The ID '%s' is not valid", id)
}

// resourcesTags returns the tags of the resources CreateTags or
// DeleteTags names (ResourceId.N), all of which must exist.
func (rg *ec2Region) resourcesTags(p ec2Params) ([]*ec2Tags, error) {
	ids := p.strings("ResourceId")
	if len(ids) == 0 {
		return nil, ec2Errorf("MissingParameter", "The request must contain the parameter resourceIdSet")
	}
	out := make([]*ec2Tags, 0, len(ids))
	for _, id := range ids {
		t, err := rg.tagsOf(id)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// createTags adds or overwrites tags on resources (ResourceId.N, Tag.N).
func (s *ec2Service) createTags(rg *ec2Region, p ec2Params, x *ec2XML) error {
	targets, err := rg.resourcesTags(p)
	if err != nil {
		return err
	}
	tags, err := ec2ParseTags(p, "Tag")
	if err != nil {
		return err
	}
	if len(tags) == 0 {
		return ec2Errorf("MissingParameter", "The request must contain the parameter tagSet")
	}
	for _, t := range targets {
		n := 0 // AWS's own (aws:) tags do not count against the limit
		for _, tag := range *t {
			if !awsOwnTag(tag.key) {
				n++
			}
		}
		for _, tag := range tags {
			if _, ok := t.get(tag.key); !ok {
				n++
			}
		}
		if n > ec2MaxTags {
			return ec2Errorf("TagLimitExceeded", "The maximum number of tags per resource is %d", ec2MaxTags)
		}
	}
	for _, t := range targets {
		for _, tag := range tags {
			t.set(tag.key, tag.value)
		}
	}
	x.bool("return", true)
	return nil
}

// deleteTags removes tags from resources: every tag when no Tag.N is
// given, a key whatever its value when Tag.N.Value is absent, else only
// when the value matches (an empty Value matching only an empty value).
func (s *ec2Service) deleteTags(rg *ec2Region, p ec2Params, x *ec2XML) error {
	targets, err := rg.resourcesTags(p)
	if err != nil {
		return err
	}
	members := p.members("Tag")
	for _, m := range members {
		if key := p.Get(m + ".Key"); awsOwnTag(key) {
			return ec2Errorf("InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
		}
	}
	for _, t := range targets {
		if len(members) == 0 {
			// AWS's own tags stay: no one can delete them.
			*t = slices.DeleteFunc(*t, func(tag ec2Tag) bool { return !awsOwnTag(tag.key) })
			continue
		}
		for _, m := range members {
			key := p.Get(m + ".Key")
			if v, ok := t.get(key); ok && (!p.Has(m+".Value") || v == p.Get(m+".Value")) {
				t.del(key)
			}
		}
	}
	x.bool("return", true)
	return nil
}

// ec2Filter is one Filter.N of a Describe: it matches a resource when one
// of its values matches (with AWS's * and ? wildcards).
type ec2Filter struct {
	name   string
	values []string
}

func ec2ParseFilters(p ec2Params) ([]ec2Filter, error) {
	var fs []ec2Filter
	for _, m := range p.members("Filter") {
		name := p.Get(m + ".Name")
		if name == "" {
			return nil, ec2Errorf("InvalidParameterValue", "The filter name must not be empty (%s.Name)", m)
		}
		fs = append(fs, ec2Filter{name: name, values: p.strings(m + ".Value")})
	}
	return fs, nil
}

func (f ec2Filter) match(v string) bool {
	for _, pat := range f.values {
		if ec2Glob(pat, v) {
			return true
		}
	}
	return false
}

// ec2Field reads a filterable attribute of a resource.
type ec2Field[T any] func(*T) string

// ec2CompileFilters makes one predicate of filters on the resource's fields
// (by filter name) and its tags (tag:<key>, tag-key, tag-value); an
// unknown filter name is InvalidParameterValue.
func ec2CompileFilters[T any](fs []ec2Filter, fields map[string]ec2Field[T], tags func(*T) ec2Tags) (func(*T) bool, error) {
	preds := make([]func(*T) bool, 0, len(fs))
	for _, f := range fs {
		var pred func(*T) bool
		if field, ok := fields[f.name]; ok {
			pred = func(v *T) bool { return f.match(field(v)) }
		} else if key, ok := strings.CutPrefix(f.name, "tag:"); ok {
			pred = func(v *T) bool {
				val, ok := tags(v).get(key)
				return ok && f.match(val)
			}
		} else if f.name == "tag-key" || f.name == "tag-value" {
			pred = func(v *T) bool {
				return slices.ContainsFunc(tags(v), func(t ec2Tag) bool {
					if f.name == "tag-key" {
						return f.match(t.key)
					}
					return f.match(t.value)
				})
			}
		} else {
			return nil, ec2Errorf("InvalidParameterValue", "The filter '%s' is invalid", f.name)
		}
		preds = append(preds, pred)
	}
	return func(v *T) bool {
		for _, pred := range preds {
			if !pred(v) {
				return false
			}
		}
		return true
	}, nil
}

// ec2FilterValues returns the values of the filters named name.
func ec2FilterValues(fs []ec2Filter, name string) (values []string, found bool) {
	for _, f := range fs {
		if f.name == name {
			values, found = append(values, f.values...), true
		}
	}
	return values, found
}

// ec2Glob matches s against an EC2 filter value: * matches any run of
// characters, ? any one, \ escapes the next.
func ec2Glob(pat, s string) bool {
	if !strings.ContainsAny(pat, `*?\`) {
		return pat == s
	}
	px, sx := 0, 0
	starPx, starSx := -1, 0
	for sx < len(s) || px < len(pat) {
		if px < len(pat) {
			switch c := pat[px]; c {
			case '*':
				starPx, starSx = px, sx
				px++
				continue
			case '?':
				if sx < len(s) {
					_, size := utf8.DecodeRuneInString(s[sx:])
					px, sx = px+1, sx+size
					continue
				}
			case '\\':
				if px+1 < len(pat) && sx < len(s) && pat[px+1] == s[sx] {
					px, sx = px+2, sx+1
					continue
				}
			default:
				if sx < len(s) && s[sx] == c {
					px, sx = px+1, sx+1
					continue
				}
			}
		}
		if starPx >= 0 && starSx < len(s) {
			starSx++
			px, sx = starPx+1, starSx
			continue
		}
		return false
	}
	return true
}

// TagAsAWS puts one of AWS's own tags (a key starting with aws:) on the EC2
// resource id in region, as AWS's services do to what they create: a VPC
// that CloudFormation creates carries aws:cloudformation:stack-name,
// aws:cloudformation:stack-id and aws:cloudformation:logical-id. No API
// call can: CreateTags refuses such keys, and DeleteTags cannot remove
// them ("Tag your Amazon EC2 resources", Tag restrictions:
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions).
// They do not count against the limit of 50.
func (e *Emulator) TagAsAWS(region, id, key, value string) error {
	s := e.services["ec2"].(*ec2Service)
	if !awsOwnTag(key) {
		return fmt.Errorf("tag %q is not one of AWS's own: its key must start with aws:", key)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rg, err := s.region(region)
	if err != nil {
		return err
	}
	t, err := rg.tagsOf(id)
	if err != nil {
		return err
	}
	t.set(key, value)
	return nil
}

// awsOwnTag reports whether a tag key is AWS's own (aws:, in any case): no
// one may set or delete it, and it does not count toward the limit.
func awsOwnTag(key string) bool { return strings.HasPrefix(strings.ToLower(key), "aws:") }
