package offload

import "testing"

// A policy as admin clients send it, every field present (pulsaradmin's struct has no
// pointers): its empty strings and zero counts inherit, its thresholds of 0 do not, and
// its bucket wins.
func TestPoliciesMergeTreatsZeroAsUnset(t *testing.T) {
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	i64 := func(n int64) *int64 { return &n }
	broker := Policies{Driver: str(DriverS3), S3Bucket: str("broker"), S3Region: str("eu-west-1"), MaxThreads: num(4),
		ReadThreads: num(3), ThresholdInBytes: i64(-1), DeletionLagInMillis: i64(1000), ReadPriority: str(ReadBookkeeperFirst)}
	ns := Policies{Driver: str(""), S3Bucket: str("ns"), S3Region: str(""), MaxThreads: num(0), ReadThreads: num(0),
		ThresholdInBytes: i64(0), DeletionLagInMillis: i64(0), ReadPriority: str(""), MaxBlockSize: num(0)}
	m := ns.Merge(broker)
	c := m.Config()
	if c.Driver != DriverS3 || c.Bucket != "ns" || c.Region != "eu-west-1" || c.MaxThreads != 4 || c.ReadThreads != 3 || c.MaxBlockSize != DefaultMaxBlockSize {
		t.Fatalf("merged driver configuration %+v", c)
	}
	if tr := m.Trigger(); tr.ThresholdBytes != 0 || tr.DeletionLagMillis != 0 || tr.ReadPriority != ReadBookkeeperFirst {
		t.Fatalf("merged trigger %+v", tr)
	}
	// Alone, a policy's zero counts are defaults, not invalid values.
	alone := Policies{Driver: str(DriverS3), S3Bucket: str("b"), S3Region: str("r"), MaxThreads: num(0), ReadThreads: num(0)}
	if err := alone.Validate(); err != nil {
		t.Fatalf("policy with zero counts: %v", err)
	}
}
