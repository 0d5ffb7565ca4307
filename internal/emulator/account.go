package emulator

// DefaultAccountID is the AWS account the emulator plays when
// Options.AccountID is empty; it appears in ARNs and owner ids.
const DefaultAccountID = "123456789012"

// Region is a region the emulator offers, with its availability zones.
type Region struct {
	Name  string
	Zones []string // e.g. us-east-1a
}

// Regions returns the regions the emulator offers (EC2 DescribeRegions
// lists them; each has a default VPC with one default subnet per zone).
// The list is a subset of AWS's commercial regions.
func Regions() []Region {
	return []Region{
		{"us-east-1", []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{"us-east-2", []string{"us-east-2a", "us-east-2b", "us-east-2c"}},
		{"us-west-2", []string{"us-west-2a", "us-west-2b", "us-west-2c"}},
		{"eu-west-1", []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}},
		{"eu-central-1", []string{"eu-central-1a", "eu-central-1b", "eu-central-1c"}},
		{"ap-southeast-2", []string{"ap-southeast-2a", "ap-southeast-2b", "ap-southeast-2c"}},
	}
}

// accountID is the account of these options.
func (o Options) accountID() string {
	if o.AccountID != "" {
		return o.AccountID
	}
	return DefaultAccountID
}

// disabled is the set of DisabledRegions.
func (o Options) disabled() map[string]bool {
	out := make(map[string]bool, len(o.DisabledRegions))
	for _, r := range o.DisabledRegions {
		out[r] = true
	}
	return out
}
