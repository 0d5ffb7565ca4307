package emulator

import (
	"fmt"
	"net/http"
	"strings"
)

// STS answers the query protocol (POST form Action=...&Version=2011-06-15)
// with XML, as IAM does. Only GetCallerIdentity is served: the sidecar asks
// it which account its credentials belong to. AWS's reference:
// https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html
// (no parameters; GetCallerIdentityResponse/GetCallerIdentityResult holds
// Account, Arn and UserId; no permission is needed to call it).

const (
	stsVersion   = "2011-06-15"
	stsNamespace = "https://sts.amazonaws.com/doc/2011-06-15/"
)

// stsService plays the caller's identity in the emulator's account: the
// ARN Options.Identities maps its access key to, the IAM user named after
// the key by default (as its CloudTrail events say).
type stsService struct {
	account string
	trail   *cloudTrail
}

func newSTS(opts Options, trail *cloudTrail) *stsService {
	return &stsService{account: opts.accountID(), trail: trail}
}

// operation is the form's Action, of a body of at most 1 MiB.
func (s *stsService) operation(r *http.Request) string {
	r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
	return queryAction(r)
}

func (s *stsService) serve(w http.ResponseWriter, r *http.Request, op string) {
	if v := r.Form.Get("Version"); op != "GetCallerIdentity" || v != stsVersion {
		s.writeError(w, r, http.StatusBadRequest, "InvalidAction", fmt.Sprintf("Could not find operation %s for version %s", op, v))
		return
	}
	// Any credentials are accepted: the caller is who its access key
	// plays (Options.Identities), by default an IAM user named after the
	// key, in the emulator's account.
	arn, ui := s.trail.identity(accessKeyID(r))
	var x iamXML
	x.open("GetCallerIdentityResult").
		elem("Arn", arn).
		elem("UserId", ui["principalId"].(string)).
		elem("Account", ui["accountId"].(string)).
		close("GetCallerIdentityResult")
	id := newRequestID()
	x.open("ResponseMetadata").elem("RequestId", id).close("ResponseMetadata")
	writeSTS(w, http.StatusOK, id, "GetCallerIdentityResponse", x.String())
}

func (s *stsService) throttle() (int, string) { return http.StatusBadRequest, "Throttling" }

func (s *stsService) denied() (int, string, string) {
	return http.StatusForbidden, "InvalidClientTokenId", "The security token included in the request is invalid."
}

func (s *stsService) writeError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	writeQueryError(w, stsNamespace, status, code, message)
}

// writeSTS answers with status and an XML document whose root element (in
// STS's namespace) holds content; id is the request's.
func writeSTS(w http.ResponseWriter, status int, id, root, content string) {
	writeQuery(w, stsNamespace, status, id, root, content)
}

// accessKeyID is the access key id a request is signed with; "" when
// unsigned.
func accessKeyID(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	i := strings.Index(auth, "Credential=")
	if i < 0 {
		return ""
	}
	cred := auth[i+len("Credential="):]
	if j := strings.IndexByte(cred, '/'); j >= 0 {
		return cred[:j]
	}
	return ""
}
