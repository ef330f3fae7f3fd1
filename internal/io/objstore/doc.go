// Package objstore is the S3 sink (builtin://s3, also builtin://cloud-storage, the name of
// the cloud storage sink Pulsar users know): a topic's messages are written to an
// S3-compatible object store as JSON-lines, Parquet, Avro or bytes objects, one object per batch (by
// count, bytes or time), in one directory per topic and publish date.
//
// Configs (the cloud storage sink's names): bucket (required), region (us-east-1), endpoint
// (an S3-compatible server, path-style addressing), accessKeyId / secretAccessKey (else the
// AWS default credential chain), pathPrefix (""), formatType (json, parquet, avro, bytes;
// default json), avroCodec (snappy; none, deflate, zstandard), bytesFormatTypeSeparator
// (0x10; formats.go),
// partitionerType (time, partition: the date directory is the publish date, or absent),
// timePartitionPattern (yyyy-MM-dd; also yyyy-MM-dd-HH and yyyy/MM/dd), batchSize (1000
// records), maxBatchBytes (10000000), batchTimeMs (10000).
//
// Object names:
//
//	{pathPrefix}{tenant}/{namespace}/{topic}/{date}/{publish ms of the first record}-{first message id}.{json|parquet|avro|raw}
//
// A JSON object has one line per message: {"topic","key","value","messageId","publishTime",
// "eventTime","properties"}, value the message's JSON when it is JSON, else a string (UTF-8) or
// base64. A Parquet object (snappy) has the columns topic, key, value (bytes), messageId,
// publishTime and eventTime (ms), properties (a JSON object as a string). An Avro object
// (an object container file) has records of the same fields (AvroRow), a bytes object the
// values alone with the separator between them.
//
// Messages are acknowledged only after the object holding them was stored (PutObject
// answered), so a crash re-sends the unacknowledged ones into a new object: at-least-once.
// A batch that fails is retried whole with backoff and the same object name, so a retry
// overwrites rather than duplicates.
package objstore
