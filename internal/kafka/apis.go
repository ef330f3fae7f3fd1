package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler serves one request. It calls reply exactly once, with the response (its version
// set from the request's) or nil for a request that gets none (Produce with acks=0); it
// may do so later, from another goroutine, since responses leave in request order anyway
// (conn.go).
type handler func(c *conn, req kmsg.Request, reply func(kmsg.Response))

// api is one supported API: the version range ApiVersions announces and its handler.
type api struct {
	min, max int16
	handle   handler
}

// apis is the table of supported APIs and versions; docs/kafka.md lists the same (a test
// keeps them in step). An API or version outside it closes the connection (after
// ApiVersions, which every client sends first, told the client what to use). Fetch stops at
// v12 and Metadata at v12 because later versions name topics by id, Produce at v11
// likewise; ListOffsets v8 is the last without KIP-1005's local-log semantics.
var apis map[int16]api

func init() {
	apis = map[int16]api{
		kmsg.Produce.Int16():                      {3, 11, handleProduce},
		kmsg.Fetch.Int16():                        {4, 12, handleFetch},
		kmsg.ListOffsets.Int16():                  {1, 8, handleListOffsets},
		kmsg.Metadata.Int16():                     {0, 12, handleMetadata},
		kmsg.OffsetCommit.Int16():                 {2, 8, handleOffsetCommit},
		kmsg.OffsetFetch.Int16():                  {1, 8, handleOffsetFetch},
		kmsg.FindCoordinator.Int16():              {0, 5, handleFindCoordinator},
		kmsg.JoinGroup.Int16():                    {0, 9, handleJoinGroup},
		kmsg.Heartbeat.Int16():                    {0, 4, handleHeartbeat},
		kmsg.LeaveGroup.Int16():                   {0, 5, handleLeaveGroup},
		kmsg.SyncGroup.Int16():                    {0, 5, handleSyncGroup},
		kmsg.DescribeGroups.Int16():               {0, 5, handleDescribeGroups},
		kmsg.ListGroups.Int16():                   {0, 4, handleListGroups},
		kmsg.ApiVersions.Int16():                  {0, 4, handleApiVersions},
		kmsg.CreateTopics.Int16():                 {2, 7, handleCreateTopics},
		kmsg.DeleteTopics.Int16():                 {1, 6, handleDeleteTopics},
		kmsg.DeleteRecords.Int16():                {0, 2, handleDeleteRecords},
		kmsg.InitProducerID.Int16():               {0, 4, handleInitProducerID},
		kmsg.AddPartitionsToTxn.Int16():           {0, 3, handleAddPartitionsToTxn},
		kmsg.AddOffsetsToTxn.Int16():              {0, 3, handleAddOffsetsToTxn},
		kmsg.EndTxn.Int16():                       {0, 4, handleEndTxn},
		kmsg.WriteTxnMarkers.Int16():              {1, 1, handleWriteTxnMarkers},
		kmsg.TxnOffsetCommit.Int16():              {0, 3, handleTxnOffsetCommit},
		kmsg.DescribeConfigs.Int16():              {1, 4, handleDescribeConfigs},
		kmsg.AlterConfigs.Int16():                 {0, 2, handleAlterConfigs},
		kmsg.CreatePartitions.Int16():             {0, 3, handleCreatePartitions},
		kmsg.DeleteGroups.Int16():                 {0, 2, handleDeleteGroups},
		kmsg.IncrementalAlterConfigs.Int16():      {0, 1, handleIncrementalAlterConfigs},
		kmsg.DescribeCluster.Int16():              {0, 1, handleDescribeCluster},
		kmsg.DescribeProducers.Int16():            {0, 0, handleDescribeProducers},
		kmsg.DescribeTransactions.Int16():         {0, 0, handleDescribeTransactions},
		kmsg.ListTransactions.Int16():             {0, 2, handleListTransactions},
		kmsg.SASLHandshake.Int16():                {1, 1, handleSASLHandshake},
		kmsg.SASLAuthenticate.Int16():             {0, 2, handleSASLAuthenticate},
		kmsg.DescribeClientQuotas.Int16():         {0, 1, handleDescribeClientQuotas},
		kmsg.AlterClientQuotas.Int16():            {0, 1, handleAlterClientQuotas},
		kmsg.DescribeUserSCRAMCredentials.Int16(): {0, 0, handleDescribeUserSCRAMCredentials},
		kmsg.AlterUserSCRAMCredentials.Int16():    {0, 0, handleAlterUserSCRAMCredentials},
	}
}

// handleApiVersions answers with the table. A version above what we know gets
// UNSUPPORTED_VERSION in a v0 response listing our range, which is how a newer client
// learns to ask again with a version we speak (KIP-511).
func handleApiVersions(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.ApiVersionsRequest)
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		if a, ok := apis[key]; ok {
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: key, MinVersion: a.min, MaxVersion: a.max})
		}
	}
	reply(resp)
}
