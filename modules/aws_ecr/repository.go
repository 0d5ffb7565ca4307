package aws_ecr

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/ecr/types"

	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// pageSize is the maxResults of DescribeRepositories pages.
const pageSize = 1000

// namesPerCall is the most repositoryNames one DescribeRepositories call
// takes.
const namesPerCall = 100

// concurrency bounds the DescribeRepositories calls in flight during a Get.
const concurrency = 8

// repositoryMapper maps the repository table: the private repositories of
// every region of the cycle's scope.
type repositoryMapper struct {
	clients *regional.Clients[*ecr.Client]
}

func newRepositoryMapper(cfg aws.Config) *repositoryMapper {
	return &repositoryMapper{clients: regional.NewClients(cfg, func(region string) *ecr.Client {
		return ecr.NewFromConfig(cfg, func(o *ecr.Options) { o.Region = region })
	})}
}

// Read describes the repositories of every region in the scope
// (DescribeRepositories, paginated), regions concurrently. A region whose
// read fails leaves the others' repositories, with a *module.PartialError
// naming it.
func (m *repositoryMapper) Read(ctx context.Context, call module.Call) ([]Repository, error) {
	return regional.ListOf(ctx, m.clients, call.Scope, terminal, "describe repositories",
		func(cl *ecr.Client) *ecr.DescribeRepositoriesPaginator {
			return ecr.NewDescribeRepositoriesPaginator(cl, &ecr.DescribeRepositoriesInput{MaxResults: aws.Int32(pageSize)})
		},
		listed, repository)
}

func listed(page *ecr.DescribeRepositoriesOutput) []types.Repository { return page.Repositories }

// named describes the named repositories of a region.
func (m *repositoryMapper) named(ctx context.Context, region string, names []string) ([]Repository, error) {
	found, err := regional.Pages(ctx, ecr.NewDescribeRepositoriesPaginator(m.clients.Region(region), &ecr.DescribeRepositoriesInput{RepositoryNames: names}), listed)
	if err != nil {
		return nil, terminal.Classify(err, "describe repositories in %s", region)
	}
	out := make([]Repository, len(found))
	for i, r := range found {
		out[i] = repository(region, r)
	}
	return out, nil
}

// Get reads the repositories ids name (["name","region"], as
// module.CloudIDOf renders the table's identity), as Read would: only in
// the regions of the cycle's scope (one elsewhere, or an id no record
// could have, is absent), by DescribeRepositories with repositoryNames in
// each region, up to 100 names a call. ECR fails the whole call with
// RepositoryNotFoundException when any one of the names does not exist;
// the names of such a call are then described one per call, and one not
// found is absent. ECR keeps no detail to reuse: every Get is fresh. (API
// Reference, DescribeRepositories:
// https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_DescribeRepositories.html;
// maxResults and nextToken cannot be used with repositoryNames.)
func (m *repositoryMapper) Get(ctx context.Context, call module.Call, ids []string) ([]Repository, error) {
	regions := m.clients.Scope(call.Scope).Regions
	type batch struct {
		region string
		names  []string
	}
	var calls []batch
	byRegion := map[string]int{} // the call that takes a region's next names
	for _, id := range ids {
		key, ok := repositories.Identity(id)
		if !ok || key.Name == "" || !slices.Contains(regions, key.Region) {
			continue
		}
		i, ok := byRegion[key.Region]
		if !ok || len(calls[i].names) == namesPerCall {
			i = len(calls)
			byRegion[key.Region] = i
			calls = append(calls, batch{region: key.Region})
		}
		calls[i].names = append(calls[i].names, key.Name)
	}
	return regional.Gather(ctx, concurrency, len(calls), func(ctx context.Context, i int) ([]Repository, error) {
		return m.describe(ctx, calls[i].region, calls[i].names)
	})
}

// describe describes the named repositories of a region, those that
// exist: all in one call, or one per call when one of them is not found.
func (m *repositoryMapper) describe(ctx context.Context, region string, names []string) ([]Repository, error) {
	found, err := m.named(ctx, region, names)
	switch {
	case !module.IsCode(err, "RepositoryNotFoundException"):
		return found, err
	case len(names) == 1:
		return nil, nil
	}
	return regional.Gather(ctx, concurrency, len(names), func(ctx context.Context, i int) ([]Repository, error) {
		return m.describe(ctx, region, names[i:i+1])
	})
}

// repository is an ECR repository found in a region as a row.
func repository(region string, r types.Repository) Repository {
	return Repository{
		Name:       aws.ToString(r.RepositoryName),
		Region:     region,
		Mutability: r.ImageTagMutability,
		ScanOnPush: r.ImageScanningConfiguration != nil && r.ImageScanningConfiguration.ScanOnPush,
		ARN:        aws.ToString(r.RepositoryArn),
		URI:        aws.ToString(r.RepositoryUri),
		RegistryID: aws.ToString(r.RegistryId),
		CreatedAt:  aws.ToTime(r.CreatedAt),
	}
}

// readOne reads one repository back.
func (m *repositoryMapper) readOne(ctx context.Context, region, name string) (Repository, error) {
	found, err := m.named(ctx, region, []string{name})
	if err != nil {
		return Repository{}, err
	}
	if len(found) != 1 {
		return Repository{}, fmt.Errorf("describe repository %s in %s: %d repositories", name, region, len(found))
	}
	return found[0], nil
}

// mutability is r's image tag mutability: MUTABLE when it names none.
func (r Repository) mutability() types.ImageTagMutability {
	if r.Mutability != "" {
		return r.Mutability
	}
	return types.ImageTagMutabilityMutable
}

// Create creates the repository in its region and returns it. A
// repository of that name that already exists there is read back as it
// is (the engine then updates it to the row).
func (m *repositoryMapper) Create(ctx context.Context, call module.Call, want Repository) (Repository, error) {
	region := m.clients.RegionOr(call.Scope, want.Region)
	if want.Name == "" {
		return Repository{}, &module.TerminalError{Err: errors.New("create repository: repository_name is required")}
	}
	out, err := m.clients.Region(region).CreateRepository(ctx, &ecr.CreateRepositoryInput{
		RepositoryName:             aws.String(want.Name),
		ImageTagMutability:         want.mutability(),
		ImageScanningConfiguration: &types.ImageScanningConfiguration{ScanOnPush: want.ScanOnPush},
	})
	switch {
	case module.IsCode(err, "RepositoryAlreadyExistsException"):
		return m.readOne(ctx, region, want.Name)
	case err != nil:
		return Repository{}, terminal.Classify(err, "create repository %s in %s", want.Name, region)
	}
	return repository(region, *out.Repository), nil
}

// Update changes tag mutability (PutImageTagMutability) and scanning
// (PutImageScanningConfiguration); another name or region needs a new
// repository.
func (m *repositoryMapper) Update(ctx context.Context, call module.Call, want, have Repository) (Repository, error) {
	name, region := have.Name, m.clients.RegionOr(call.Scope, have.Region)
	if want.Name != name || m.clients.RegionOr(call.Scope, want.Region) != region {
		return Repository{}, module.ErrReplace
	}
	cl := m.clients.Region(region)
	if want.mutability() != have.mutability() {
		_, err := cl.PutImageTagMutability(ctx, &ecr.PutImageTagMutabilityInput{RepositoryName: aws.String(name), ImageTagMutability: want.mutability()})
		if err != nil {
			return Repository{}, terminal.Classify(err, "set image tag mutability of repository %s in %s", name, region)
		}
	}
	if want.ScanOnPush != have.ScanOnPush {
		_, err := cl.PutImageScanningConfiguration(ctx, &ecr.PutImageScanningConfigurationInput{RepositoryName: aws.String(name),
			ImageScanningConfiguration: &types.ImageScanningConfiguration{ScanOnPush: want.ScanOnPush}})
		if err != nil {
			return Repository{}, terminal.Classify(err, "set scan on push of repository %s in %s", name, region)
		}
	}
	return m.readOne(ctx, region, name)
}

// Delete deletes the repository. One that still holds images is not
// deleted (RepositoryNotEmptyException, reported, not retried): images are
// not the table's to throw away. A repository already gone
// (RepositoryNotFoundException) is no error. (API Reference,
// DeleteRepository:
// https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_DeleteRepository.html)
func (m *repositoryMapper) Delete(ctx context.Context, call module.Call, have Repository) error {
	region := m.clients.RegionOr(call.Scope, have.Region)
	_, err := m.clients.Region(region).DeleteRepository(ctx, &ecr.DeleteRepositoryInput{RepositoryName: aws.String(have.Name)})
	return terminal.Classify(module.Deleted(err, "RepositoryNotFoundException"), "delete repository %s in %s", have.Name, region)
}

// Equal compares name, region, tag mutability (none is MUTABLE, as a
// cloud that leaves it out means) and scan on push: by meaning, which
// module.Same per column would not.
func (m *repositoryMapper) Equal(db, cloud Repository) bool {
	return db.Name == cloud.Name && db.Region == cloud.Region &&
		db.mutability() == cloud.mutability() && db.ScanOnPush == cloud.ScanOnPush
}

var (
	_ module.MapperOf[Repository]  = (*repositoryMapper)(nil)
	_ module.GetterOf[Repository]  = (*repositoryMapper)(nil)
	_ module.EqualerOf[Repository] = (*repositoryMapper)(nil)
)
