#!/usr/bin/env node
// Run one real kafkajs client against a bootstrap address, in its own process.
//
// Protocol with the parent (harness/clients.py): bootstrap (ApiVersions + Metadata), print READY on
// stdout, hold the connections until stdin reaches EOF, disconnect cleanly and exit 0. Logs go to stderr so
// that stdout carries only the handshake line.
//
// Usage: NODE_PATH=harness/node/node_modules node client.js BOOTSTRAP [CLIENT_ID] [TIMEOUT_S]
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, clientId, timeoutArg] = process.argv.slice(2)
if (!bootstrap) {
  process.stderr.write('usage: client.js BOOTSTRAP [CLIENT_ID] [TIMEOUT_S]\n')
  process.exit(2)
}
const timeoutMs = Math.round(1000 * Number(timeoutArg || 20))

// kafkajs' default logger writes to stdout via console; send everything to stderr instead.
const stderrLogCreator = () => ({ namespace, level, label, log }) => {
  const { message, ...extra } = log
  process.stderr.write(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
}

const kafka = new Kafka({
  clientId: clientId || 'kafkajs',
  brokers: bootstrap.split(','),
  connectionTimeout: timeoutMs,
  requestTimeout: timeoutMs,
  logLevel: logLevel.WARN,
  logCreator: stderrLogCreator,
  // Fail fast instead of kafkajs' long default backoff; the parent reports the failure with stderr.
  retry: { retries: 2, initialRetryTime: 100 },
})

async function main () {
  const admin = kafka.admin()
  let closing = false
  const close = async (code) => {
    if (closing) return
    closing = true
    try {
      await admin.disconnect()
    } finally {
      process.exit(code)
    }
  }
  // connect() sends ApiVersions and a Metadata request to a seed broker; describeCluster() makes sure a
  // Metadata response has been received before we announce readiness.
  await admin.connect()
  await admin.describeCluster()
  process.stdout.write('READY\n')
  // The parent closes our stdin to ask us to close (and the pipe closes if the parent dies).
  process.stdin.on('end', () => { close(0) })
  process.stdin.on('error', () => { close(0) })
  process.stdin.resume()
}

main().catch((err) => {
  process.stderr.write(`kafkajs client failed: ${err && err.stack ? err.stack : err}\n`)
  process.exit(1)
})
