package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ECR is a regional service answering the JSON 1.1 protocol (POST /,
// X-Amz-Target AmazonEC2ContainerRegistry_V20150921.<Op>): repositories
// per region of the credential scope, without images.

const ecrTargetPrefix = "AmazonEC2ContainerRegistry_V20150921."

// ecrService emulates ECR private repositories.
type ecrService struct {
	jsonProto
	account string

	mu    sync.Mutex
	repos map[string]map[string]*ecrRepo // region -> name -> repository
}

// ecrRepo is a repository as the emulator keeps it.
type ecrRepo struct {
	name, region   string
	created        time.Time
	tagMutability  string
	scanOnPush     bool
	encryptionType string
	kmsKey         string
	tags           []ecrTag
}

type ecrTag struct {
	Key   string `json:"Key"`
	Value string `json:"Value"`
}

func newECR(opts Options) *ecrService {
	return &ecrService{jsonProto: jsonProto{"application/x-amz-json-1.1"}, account: opts.accountID(), repos: map[string]map[string]*ecrRepo{}}
}

// ecrErr is an ECR error response.
type ecrErr struct {
	status    int
	code, msg string
}

func ecrError(code, format string, args ...any) *ecrErr {
	return &ecrErr{status: http.StatusBadRequest, code: code, msg: fmt.Sprintf(format, args...)}
}

func ecrInvalid(format string, args ...any) *ecrErr {
	return ecrError("InvalidParameterException", format, args...)
}

// ecrCall is one request: its region and body.
type ecrCall struct {
	region string
	body   []byte
}

// decode reads the request body into v.
func (c ecrCall) decode(v any) *ecrErr {
	if len(bytes.TrimSpace(c.body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		return ecrError("SerializationException", "%s", err.Error())
	}
	return nil
}

type ecrHandler func(s *ecrService, c ecrCall) (any, *ecrErr)

var ecrOps = map[string]ecrHandler{
	"CreateRepository":              (*ecrService).createRepository,
	"DescribeRepositories":          (*ecrService).describeRepositories,
	"DeleteRepository":              (*ecrService).deleteRepository,
	"PutImageTagMutability":         (*ecrService).putImageTagMutability,
	"PutImageScanningConfiguration": (*ecrService).putImageScanningConfiguration,
	"TagResource":                   (*ecrService).tagResource,
	"UntagResource":                 (*ecrService).untagResource,
	"ListTagsForResource":           (*ecrService).listTagsForResource,
}

func (s *ecrService) operation(r *http.Request) string {
	t := r.Header.Get("X-Amz-Target")
	if op, ok := strings.CutPrefix(t, ecrTargetPrefix); ok && op != "" {
		return op
	}
	return "Unknown"
}

func (s *ecrService) serve(w http.ResponseWriter, r *http.Request, op string) {
	handler, ok := ecrOps[op]
	if !ok {
		s.writeError(w, r, http.StatusBadRequest, "UnknownOperationException",
			fmt.Sprintf("The emulator does not implement ECR operation %q.", r.Header.Get("X-Amz-Target")))
		return
	}
	body, region, ok := s.read(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	out, e := handler(s, ecrCall{region: region, body: body})
	s.mu.Unlock()
	if e != nil {
		s.answer(w, r, nil, e.status, e.code, e.msg)
		return
	}
	s.answer(w, r, out, 0, "", "")
}

// ecrEpoch is a timestamp as the JSON protocols write it: epoch seconds.
type ecrEpoch time.Time

func (t ecrEpoch) MarshalJSON() ([]byte, error) {
	ms := time.Time(t).UnixMilli()
	return []byte(strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)), nil
}

// ecrRepoJSON is a repository in responses.
type ecrRepoJSON struct {
	RepositoryArn              string              `json:"repositoryArn"`
	RegistryID                 string              `json:"registryId"`
	RepositoryName             string              `json:"repositoryName"`
	RepositoryURI              string              `json:"repositoryUri"`
	CreatedAt                  ecrEpoch            `json:"createdAt"`
	ImageTagMutability         string              `json:"imageTagMutability"`
	ImageScanningConfiguration ecrScanning         `json:"imageScanningConfiguration"`
	EncryptionConfiguration    ecrEncryptionConfig `json:"encryptionConfiguration"`
}

type ecrScanning struct {
	ScanOnPush bool `json:"scanOnPush"`
}

type ecrEncryptionConfig struct {
	EncryptionType string `json:"encryptionType"`
	KmsKey         string `json:"kmsKey,omitempty"`
}

// arnPrefix is the ARN of the repositories of a region, less their name.
func (s *ecrService) arnPrefix(region string) string {
	return "arn:aws:ecr:" + region + ":" + s.account + ":repository/"
}

func (s *ecrService) view(r *ecrRepo) ecrRepoJSON {
	return ecrRepoJSON{
		RepositoryArn:              s.arnPrefix(r.region) + r.name,
		RegistryID:                 s.account,
		RepositoryName:             r.name,
		RepositoryURI:              s.account + ".dkr.ecr." + r.region + ".amazonaws.com/" + r.name,
		CreatedAt:                  ecrEpoch(r.created),
		ImageTagMutability:         r.tagMutability,
		ImageScanningConfiguration: ecrScanning{ScanOnPush: r.scanOnPush},
		EncryptionConfiguration:    ecrEncryptionConfig{EncryptionType: r.encryptionType, KmsKey: r.kmsKey},
	}
}

// ecrCheckName applies ECR's repository name rules.
func ecrCheckName(name string) *ecrErr {
	if len(name) < 2 || len(name) > 256 {
		return ecrInvalid("Invalid parameter at 'repositoryName' failed to satisfy constraint: 'must have length between 2 and 256'")
	}
	if !ecrNameOK(name) {
		return ecrInvalid("Invalid parameter at 'repositoryName' failed to satisfy constraint: 'must satisfy regular expression '(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*''")
	}
	return nil
}

// ecrNameOK matches (?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*:
// slash-separated components of lowercase alphanumeric runs joined by
// single separators.
func ecrNameOK(name string) bool {
	for _, comp := range strings.Split(name, "/") {
		if comp == "" {
			return false
		}
		prevSep := true // a component starts with an alphanumeric
		for i := 0; i < len(comp); i++ {
			c := comp[i]
			switch {
			case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
				prevSep = false
			case c == '.' || c == '_' || c == '-':
				if prevSep {
					return false
				}
				prevSep = true
			default:
				return false
			}
		}
		if prevSep {
			return false
		}
	}
	return true
}

// ecrCheckRegistry refuses a registry id other than the account's.
func (s *ecrService) checkRegistry(id *string) *ecrErr {
	if id != nil && *id != s.account {
		return ecrInvalid("Invalid parameter at 'registryId' failed to satisfy constraint: 'The registry ID must match the account ID of the caller'")
	}
	return nil
}

// repo finds a named repository of the call's region.
func (s *ecrService) repo(c ecrCall, registry *string, name string) (*ecrRepo, *ecrErr) {
	if e := s.checkRegistry(registry); e != nil {
		return nil, e
	}
	if name == "" {
		return nil, ecrInvalid("Invalid parameter at 'repositoryName' failed to satisfy constraint: 'must not be null'")
	}
	return s.find(c, name)
}

// find returns the repository called name in the call's region, or
// RepositoryNotFoundException.
func (s *ecrService) find(c ecrCall, name string) (*ecrRepo, *ecrErr) {
	if r, ok := s.repos[c.region][name]; ok {
		return r, nil
	}
	return nil, ecrError("RepositoryNotFoundException",
		"The repository with name '%s' does not exist in the registry with id '%s'", name, s.account)
}

func ecrCheckTags(tags []ecrTag) *ecrErr {
	if len(tags) > 200 {
		return ecrInvalid("Invalid parameter at 'tags' failed to satisfy constraint: 'must have at most 200 tags'")
	}
	for _, t := range tags {
		if len(t.Key) < 1 || len(t.Key) > 128 || len(t.Value) > 256 {
			return ecrInvalid("Invalid parameter at 'tags' failed to satisfy constraint: 'keys must have 1 to 128 characters, values at most 256'")
		}
	}
	return nil
}

func ecrMergeTags(have, add []ecrTag) []ecrTag {
	out := append([]ecrTag(nil), have...)
	for _, t := range add {
		replaced := false
		for i := range out {
			if out[i].Key == t.Key {
				out[i], replaced = t, true
			}
		}
		if !replaced {
			out = append(out, t)
		}
	}
	return out
}

func ecrCheckMutability(m string) *ecrErr {
	if m != "MUTABLE" && m != "IMMUTABLE" {
		return ecrInvalid("Invalid parameter at 'imageTagMutability' failed to satisfy constraint: 'Member must satisfy enum value set: [MUTABLE, IMMUTABLE]'")
	}
	return nil
}
