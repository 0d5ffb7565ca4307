package aws_iam

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// iamClients is what the module's mappers call IAM with.
type iamClients struct {
	clients *regional.Clients[*iam.Client]
}

func newClients(cfg aws.Config) iamClients {
	return iamClients{clients: regional.NewClients(cfg, func(region string) *iam.Client {
		return iam.NewFromConfig(cfg, func(o *iam.Options) { o.Region = region })
	})}
}

// client returns the IAM client for the default region of the cycle's
// scope. IAM is global: any region reaches the same roles and policies;
// signing for the scope's default region makes partitions other than aws
// (aws-cn, aws-us-gov) resolve to their own endpoint.
func (c iamClients) client(call module.Call) *iam.Client {
	return c.clients.Region(c.clients.Scope(call.Scope).Default)
}

// policyArns maps the names of the account's own policies to their ARNs
// (ListPolicies, Scope Local): a policy is known by name in the tables,
// and by ARN (which holds its path) to IAM.
func policyArns(ctx context.Context, cl *iam.Client) (map[string]string, error) {
	ps, err := listPolicies(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ps))
	for _, pol := range ps {
		out[aws.ToString(pol.PolicyName)] = aws.ToString(pol.Arn)
	}
	return out, nil
}

// listPolicies lists the account's own policies (ListPolicies, Scope
// Local), every page.
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_ListPolicies.html
func listPolicies(ctx context.Context, cl *iam.Client) ([]types.Policy, error) {
	ps, err := regional.Pages(ctx, iam.NewListPoliciesPaginator(cl, &iam.ListPoliciesInput{Scope: types.PolicyScopeTypeLocal, MaxItems: aws.Int32(listPage)}),
		func(page *iam.ListPoliciesOutput) []types.Policy { return page.Policies })
	if err != nil {
		return nil, terminal.Classify(err, "list policies")
	}
	return ps, nil
}

// optional is s for an optional parameter: nil when empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
