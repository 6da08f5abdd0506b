// Package amqp is the built-in AMQP 0-9-1 protocol.
package amqp

import _ "github.com/rabbitmq/amqp091-go" // replaced by the real use
