package emulator

import (
	"fmt"
	"net/http"
	"strings"
)

// CloudFormation answers the query protocol (POST form
// Action=...&Version=2010-05-15, XML answers); only DescribeType of the
// resource types the Cloud Control emulation knows is served (the schema
// in Schema, ProvisioningType from the schema's handlers). AWS's
// reference:
// https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeType.html

const (
	cfnVersion   = "2010-05-15"
	cfnNamespace = "http://cloudformation.amazonaws.com/doc/2010-05-15/"
)

type cfnService struct{ cc *ccService }

func newCloudFormation(cc *ccService) *cfnService { return &cfnService{cc: cc} }

func (s *cfnService) operation(r *http.Request) string {
	r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
	return queryAction(r)
}

func (s *cfnService) serve(w http.ResponseWriter, r *http.Request, op string) {
	if v := r.Form.Get("Version"); op != "DescribeType" || v != cfnVersion {
		s.writeError(w, r, http.StatusBadRequest, "InvalidAction", fmt.Sprintf("Could not find operation %s for version %s", op, v))
		return
	}
	typ, name := r.Form.Get("Type"), r.Form.Get("TypeName")
	if arn := r.Form.Get("Arn"); arn != "" {
		// arn:aws:cloudformation:REGION::type/resource/AWS-Logs-LogGroup
		i := strings.Index(arn, ":type/resource/")
		if i < 0 {
			s.writeError(w, r, http.StatusNotFound, "TypeNotFoundException", fmt.Sprintf("The type with arn '%s' cannot be found.", arn))
			return
		}
		typ, name = "RESOURCE", strings.ReplaceAll(arn[i+len(":type/resource/"):], "-", "::")
	}
	if typ == "" || name == "" {
		s.writeError(w, r, http.StatusBadRequest, "ValidationError", "Either Arn, or TypeName and Type, must be given.")
		return
	}
	s.cc.mu.Lock()
	sc, ok := s.cc.schemas[name]
	s.cc.mu.Unlock()
	if typ != "RESOURCE" || !ok {
		s.writeError(w, r, http.StatusNotFound, "TypeNotFoundException", fmt.Sprintf("The type '%s' cannot be found.", name))
		return
	}
	region, _ := credentialScope(r)
	if region == "" {
		region = defaultRegion
	}
	var x iamXML
	x.open("DescribeTypeResult").
		elem("Arn", "arn:aws:cloudformation:"+region+"::type/resource/"+strings.ReplaceAll(name, "::", "-")).
		elem("Type", "RESOURCE").
		elem("TypeName", name).
		elem("DefaultVersionId", "00000001").
		elem("IsDefaultVersion", "true").
		elem("Schema", sc.raw).
		elem("ProvisioningType", sc.provisioningType()).
		elem("DeprecatedStatus", "LIVE").
		elem("Visibility", "PUBLIC").
		close("DescribeTypeResult")
	id := newRequestID()
	x.open("ResponseMetadata").elem("RequestId", id).close("ResponseMetadata")
	writeQuery(w, cfnNamespace, http.StatusOK, id, "DescribeTypeResponse", x.String())
}

func (s *cfnService) throttle() (int, string) { return http.StatusBadRequest, "Throttling" }

func (s *cfnService) denied() (int, string, string) {
	return http.StatusForbidden, "InvalidClientTokenId", "The security token included in the request is invalid."
}

func (s *cfnService) writeError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	writeQueryError(w, cfnNamespace, status, code, message)
}
