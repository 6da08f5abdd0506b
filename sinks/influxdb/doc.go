// Package influxdb is the InfluxDB sink.
package influxdb

import _ "github.com/influxdata/influxdb-client-go/v2" // replaced by the real use
