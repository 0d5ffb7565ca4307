package emulator

import (
	"maps"
	"slices"
	"strings"
	"time"
)

func (s *ecrService) createRepository(c ecrCall) (any, *ecrErr) {
	var in struct {
		RegistryID                 *string              `json:"registryId"`
		RepositoryName             string               `json:"repositoryName"`
		Tags                       []ecrTag             `json:"tags"`
		ImageTagMutability         string               `json:"imageTagMutability"`
		ImageScanningConfiguration *ecrScanning         `json:"imageScanningConfiguration"`
		EncryptionConfiguration    *ecrEncryptionConfig `json:"encryptionConfiguration"`
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	if e := s.checkRegistry(in.RegistryID); e != nil {
		return nil, e
	}
	if e := ecrCheckName(in.RepositoryName); e != nil {
		return nil, e
	}
	if in.ImageTagMutability == "" {
		in.ImageTagMutability = "MUTABLE"
	}
	if e := ecrCheckMutability(in.ImageTagMutability); e != nil {
		return nil, e
	}
	if e := ecrCheckTags(in.Tags); e != nil {
		return nil, e
	}
	enc := ecrEncryptionConfig{EncryptionType: "AES256"}
	if in.EncryptionConfiguration != nil {
		enc = *in.EncryptionConfiguration
		switch enc.EncryptionType {
		case "AES256":
			if enc.KmsKey != "" {
				return nil, ecrInvalid("Invalid parameter at 'encryptionConfiguration' failed to satisfy constraint: 'kmsKey can only be specified when encryptionType is KMS or KMS_DSSE'")
			}
		case "KMS", "KMS_DSSE":
			if enc.KmsKey == "" {
				enc.KmsKey = "arn:aws:kms:" + c.region + ":" + s.account + ":alias/aws/ecr"
			}
		default:
			return nil, ecrInvalid("Invalid parameter at 'encryptionType' failed to satisfy constraint: 'Member must satisfy enum value set: [AES256, KMS, KMS_DSSE]'")
		}
	}
	if _, dup := s.repos[c.region][in.RepositoryName]; dup {
		return nil, ecrError("RepositoryAlreadyExistsException",
			"The repository with name '%s' already exists in the registry with id '%s'", in.RepositoryName, s.account)
	}
	r := &ecrRepo{
		name: in.RepositoryName, region: c.region, created: time.Now().UTC().Truncate(time.Millisecond),
		tagMutability: in.ImageTagMutability, encryptionType: enc.EncryptionType, kmsKey: enc.KmsKey,
		tags: ecrMergeTags(nil, in.Tags),
	}
	if in.ImageScanningConfiguration != nil {
		r.scanOnPush = in.ImageScanningConfiguration.ScanOnPush
	}
	if s.repos[c.region] == nil {
		s.repos[c.region] = map[string]*ecrRepo{}
	}
	s.repos[c.region][r.name] = r
	return map[string]any{"repository": s.view(r)}, nil
}

func (s *ecrService) describeRepositories(c ecrCall) (any, *ecrErr) {
	var in struct {
		RegistryID      *string  `json:"registryId"`
		RepositoryNames []string `json:"repositoryNames"`
		NextToken       *string  `json:"nextToken"`
		MaxResults      *int     `json:"maxResults"`
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	if e := s.checkRegistry(in.RegistryID); e != nil {
		return nil, e
	}
	out := []ecrRepoJSON{}
	if len(in.RepositoryNames) > 0 {
		if in.NextToken != nil || in.MaxResults != nil {
			return nil, ecrInvalid("Invalid parameter at 'maxResults' failed to satisfy constraint: 'maxResults and nextToken cannot be used with repositoryNames'")
		}
		if len(in.RepositoryNames) > 100 {
			return nil, ecrInvalid("Invalid parameter at 'repositoryNames' failed to satisfy constraint: 'Member must have length less than or equal to 100'")
		}
		for _, n := range in.RepositoryNames {
			if e := ecrCheckName(n); e != nil {
				return nil, e
			}
			r, e := s.find(c, n)
			if e != nil {
				return nil, e
			}
			out = append(out, s.view(r))
		}
		return map[string]any{"repositories": out}, nil
	}
	max := 100
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 1000 {
			return nil, ecrInvalid("Invalid parameter at 'maxResults' failed to satisfy constraint: 'Member must have value between 1 and 1000'")
		}
		max = *in.MaxResults
	}
	after := ""
	if in.NextToken != nil {
		var ok bool
		if after, ok = pageAfter("ecr:", *in.NextToken); !ok {
			return nil, ecrInvalid("Invalid parameter at 'nextToken' failed to satisfy constraint: 'Invalid NextToken'")
		}
	}
	page, next := paginate(slices.Sorted(maps.Keys(s.repos[c.region])), after, max, "ecr:")
	for _, n := range page {
		out = append(out, s.view(s.repos[c.region][n]))
	}
	resp := map[string]any{"repositories": out}
	if next != "" {
		resp["nextToken"] = next
	}
	return resp, nil
}

func (s *ecrService) deleteRepository(c ecrCall) (any, *ecrErr) {
	var in struct {
		RegistryID     *string `json:"registryId"`
		RepositoryName string  `json:"repositoryName"`
		Force          bool    `json:"force"`
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	r, e := s.repo(c, in.RegistryID, in.RepositoryName)
	if e != nil {
		return nil, e
	}
	// No images are ever pushed, so RepositoryNotEmptyException cannot
	// arise.
	delete(s.repos[c.region], r.name)
	return map[string]any{"repository": s.view(r)}, nil
}

func (s *ecrService) putImageTagMutability(c ecrCall) (any, *ecrErr) {
	var in struct {
		RegistryID         *string `json:"registryId"`
		RepositoryName     string  `json:"repositoryName"`
		ImageTagMutability string  `json:"imageTagMutability"`
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	if e := ecrCheckMutability(in.ImageTagMutability); e != nil {
		return nil, e
	}
	r, e := s.repo(c, in.RegistryID, in.RepositoryName)
	if e != nil {
		return nil, e
	}
	r.tagMutability = in.ImageTagMutability
	return map[string]any{"registryId": s.account, "repositoryName": r.name, "imageTagMutability": r.tagMutability}, nil
}

func (s *ecrService) putImageScanningConfiguration(c ecrCall) (any, *ecrErr) {
	var in struct {
		RegistryID                 *string      `json:"registryId"`
		RepositoryName             string       `json:"repositoryName"`
		ImageScanningConfiguration *ecrScanning `json:"imageScanningConfiguration"`
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	if in.ImageScanningConfiguration == nil {
		return nil, ecrInvalid("Invalid parameter at 'imageScanningConfiguration' failed to satisfy constraint: 'must not be null'")
	}
	r, e := s.repo(c, in.RegistryID, in.RepositoryName)
	if e != nil {
		return nil, e
	}
	r.scanOnPush = in.ImageScanningConfiguration.ScanOnPush
	return map[string]any{"registryId": s.account, "repositoryName": r.name,
		"imageScanningConfiguration": ecrScanning{ScanOnPush: r.scanOnPush}}, nil
}

// byArn finds the repository an ARN names, in the call's region.
func (s *ecrService) byArn(c ecrCall, arn string) (*ecrRepo, *ecrErr) {
	name, ok := strings.CutPrefix(arn, s.arnPrefix(c.region))
	if !ok || ecrCheckName(name) != nil {
		return nil, ecrInvalid("Invalid parameter at 'resourceArn' failed to satisfy constraint: 'Invalid ARN %s'", arn)
	}
	return s.find(c, name)
}

func (s *ecrService) tagResource(c ecrCall) (any, *ecrErr) {
	var in struct {
		ResourceArn string   `json:"resourceArn"`
		Tags        []ecrTag `json:"tags"`
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	r, e := s.byArn(c, in.ResourceArn)
	if e != nil {
		return nil, e
	}
	merged := ecrMergeTags(r.tags, in.Tags)
	if e := ecrCheckTags(merged); e != nil {
		return nil, e
	}
	r.tags = merged
	return struct{}{}, nil
}

func (s *ecrService) untagResource(c ecrCall) (any, *ecrErr) {
	var in struct {
		ResourceArn string   `json:"resourceArn"`
		TagKeys     []string `json:"tagKeys"`
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	r, e := s.byArn(c, in.ResourceArn)
	if e != nil {
		return nil, e
	}
	r.tags = slices.DeleteFunc(r.tags, func(t ecrTag) bool { return slices.Contains(in.TagKeys, t.Key) })
	return struct{}{}, nil
}

func (s *ecrService) listTagsForResource(c ecrCall) (any, *ecrErr) {
	var in struct {
		ResourceArn string `json:"resourceArn"`
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	r, e := s.byArn(c, in.ResourceArn)
	if e != nil {
		return nil, e
	}
	tags := append([]ecrTag{}, r.tags...)
	return map[string]any{"tags": tags}, nil
}
