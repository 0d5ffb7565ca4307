package emulator

import (
	"bytes"
	"encoding/xml"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// How CloudTrail shows a query-protocol call (EC2, IAM, ELBv2): its form
// parameters and its XML response as JSON with members in lowerFirst
// case. IAM and ELBv2 lists (Name.member.N) are arrays; EC2 lists are
// {"items": [...]} sets, scalar lists named as EC2's XML names them
// (InstanceId.N is instancesSet.items[].instanceId, ResourceId.N
// resourcesSet.items[].resourceId, Tag.N tagSet.items[]), as in AWS's
// examples: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-with-cloudtrail.html
// Values stay strings.

// ec2Sets are EC2 request lists logged under another name: the set's name
// and, for a list of values, the name of each item's member.
var ec2Sets = map[string][2]string{
	"InstanceId":        {"instancesSet", "instanceId"},
	"ResourceId":        {"resourcesSet", "resourceId"},
	"SecurityGroupId":   {"groupSet", "groupId"},
	"Tag":               {"tagSet", ""},
	"Filter":            {"filterSet", ""},
	"TagSpecification":  {"tagSpecificationSet", ""},
	"SecurityGroupRule": {"securityGroupRuleSet", ""},
}

// formParams is a query request's parameters (without Action and
// Version) as CloudTrail logs them.
func formParams(form url.Values, ec2 bool) any {
	root := map[string]any{}
	for k, v := range form {
		if k == "Action" || k == "Version" || len(v) == 0 {
			continue
		}
		segs := strings.Split(k, ".")
		segs = slices.DeleteFunc(segs, func(s string) bool { return s == "member" || s == "entry" })
		cur := root
		for i, seg := range segs {
			if i == len(segs)-1 {
				cur[seg] = v[0]
				break
			}
			next, ok := cur[seg].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[seg] = next
			}
			cur = next
		}
	}
	if len(root) == 0 {
		return nil
	}
	return formValue(root, ec2)
}

// formValue turns a tree of form segments into CloudTrail's shape: maps
// whose keys are all indexes are lists.
func formValue(v any, ec2 bool) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, val := range m {
		child, isMap := val.(map[string]any)
		if !isMap || !indexed(child) {
			out[lowerFirst(k)] = formValue(val, ec2)
			continue
		}
		list := indexedList(child, ec2)
		if !ec2 {
			out[lowerFirst(k)] = list
			continue
		}
		name, member := lowerFirst(k), ""
		if s, ok := ec2Sets[k]; ok {
			name, member = s[0], s[1]
		}
		if len(list) > 0 {
			if _, scalar := list[0].(string); scalar {
				if member == "" {
					member = lowerFirst(k)
				}
				if _, ok := ec2Sets[k]; !ok {
					name = lowerFirst(k) + "Set"
				}
				for i, item := range list {
					list[i] = map[string]any{member: item}
				}
			}
		}
		out[name] = map[string]any{"items": list}
	}
	return out
}

// indexed reports whether every key of m is a list index.
func indexed(m map[string]any) bool {
	for k := range m {
		if _, err := strconv.Atoi(k); err != nil {
			return false
		}
	}
	return len(m) > 0
}

func indexedList(m map[string]any, ec2 bool) []any {
	keys := make([]int, 0, len(m))
	for k := range m {
		n, _ := strconv.Atoi(k)
		keys = append(keys, n)
	}
	slices.Sort(keys)
	out := make([]any, len(keys))
	for i, n := range keys {
		out[i] = formValue(m[strconv.Itoa(n)], ec2)
	}
	return out
}

// xmlNode is an element of an XML response.
type xmlNode struct {
	name     string
	text     string
	children []*xmlNode
}

func parseXML(body []byte) *xmlNode {
	dec := xml.NewDecoder(bytes.NewReader(body))
	var stack []*xmlNode
	var root *xmlNode
	for {
		tok, err := dec.Token()
		if err != nil {
			return root
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &xmlNode{name: t.Name.Local}
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				top.children = append(top.children, n)
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		}
	}
}

// xmlElements is a query response as CloudTrail's responseElements: EC2's
// whole response, the *Result element of IAM's and ELBv2's (nil when it
// has none, as for a delete).
func xmlElements(body []byte, ec2 bool) any {
	root := parseXML(body)
	if root == nil {
		return nil
	}
	if ec2 {
		return xmlValue(root, true)
	}
	for _, c := range root.children {
		if strings.HasSuffix(c.name, "Result") {
			if len(c.children) == 0 {
				return nil
			}
			return xmlValue(c, false)
		}
	}
	return nil
}

func xmlValue(n *xmlNode, ec2 bool) any {
	if len(n.children) == 0 {
		return strings.TrimSpace(n.text)
	}
	if n.children[0].name == "item" || n.children[0].name == "member" {
		list := make([]any, len(n.children))
		for i, c := range n.children {
			list[i] = xmlValue(c, ec2)
		}
		if ec2 {
			return map[string]any{"items": list}
		}
		return list
	}
	out := map[string]any{}
	for _, c := range n.children {
		if ec2 && c.name == "return" {
			out["_return"] = strings.TrimSpace(c.text) == "true"
			continue
		}
		out[lowerFirst(c.name)] = xmlValue(c, ec2)
	}
	return out
}

// identifierTypes are the members that name a resource, and its type, as
// LookupEvents answers Resources.
var identifierTypes = map[string]string{
	"bucketName":      "AWS::S3::Bucket",
	"instanceId":      "AWS::EC2::Instance",
	"groupId":         "AWS::EC2::SecurityGroup",
	"vpcId":           "AWS::EC2::VPC",
	"subnetId":        "AWS::EC2::Subnet",
	"roleName":        "AWS::IAM::Role",
	"policyArn":       "AWS::IAM::ManagedPolicy",
	"repositoryName":  "AWS::ECR::Repository",
	"loadBalancerArn": "AWS::ElasticLoadBalancingV2::LoadBalancer",
	"targetGroupArn":  "AWS::ElasticLoadBalancingV2::TargetGroup",
	"listenerArn":     "AWS::ElasticLoadBalancingV2::Listener",
	"queueUrl":        "AWS::SQS::Queue",
}

// ec2Prefixes type an EC2 resourceId by its prefix.
var ec2Prefixes = []struct{ prefix, typ string }{
	{"sg-", "AWS::EC2::SecurityGroup"}, {"i-", "AWS::EC2::Instance"}, {"vpc-", "AWS::EC2::VPC"},
	{"subnet-", "AWS::EC2::Subnet"}, {"sgr-", "AWS::EC2::SecurityGroupRule"},
}

// lookupResources are the resources an event names: its resources
// element's, and the identifiers its parameters and response carry
// (Cloud Control's typeName and identifier too).
func lookupResources(params, response any, res []trailResource) []lookupResource {
	var out []lookupResource
	add := func(typ, name string) {
		r := lookupResource{ResourceType: typ, ResourceName: name}
		if name != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	for _, r := range res {
		if r.Type == "AWS::S3::Bucket" {
			add(r.Type, strings.TrimPrefix(r.ARN, "arn:aws:s3:::"))
			continue
		}
		add(r.Type, r.ARN)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if typ, ok := x["typeName"].(string); ok {
				if id, ok := x["identifier"].(string); ok {
					add(typ, id)
				}
			}
			for k, val := range x {
				s, ok := val.(string)
				if !ok {
					walk(val)
					continue
				}
				if typ, ok := identifierTypes[k]; ok {
					add(typ, s)
				}
				if k == "resourceId" {
					for _, p := range ec2Prefixes {
						if strings.HasPrefix(s, p.prefix) {
							add(p.typ, s)
							break
						}
					}
				}
			}
		case []any:
			for _, val := range x {
				walk(val)
			}
		}
	}
	walk(params)
	walk(response)
	return out
}
