"""Command line: `serve`, `check-config` and `collect-once`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

from aiohttp import web

from exporter import __version__
from exporter.collection import CollectionLoop
from exporter.config.settings import ConfigError, Settings, load_settings
from exporter.config.web_config import WebServing, load_web_config
from exporter.policy import Policy, PolicyError, load_policy
from exporter.request_logs.cli import add_arguments as add_inventory_arguments
from exporter.sources.base import SourceName
from exporter.web.app import make_app
from exporter.web.exposition import Exposition, render_snapshot
from exporter.web.security import security_middlewares

log = logging.getLogger("exporter")

EXIT_CONFIG = 2
CONFIG_ENV = "KCE_CONFIG_FILE"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-client-exporter",
        description="Prometheus exporter of the client software and versions connected to Kafka brokers.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("serve", "collect in the background and serve /metrics"),
        ("check-config", "validate the configuration without connecting to anything"),
        ("collect-once", "run one collection cycle, print the exposition, exit (1 when every broker failed)"),
    ):
        command = commands.add_parser(name, help=help_text)
        command.add_argument(
            "--config",
            type=Path,
            default=os.environ.get(CONFIG_ENV),
            help=f"YAML configuration file (default: ${CONFIG_ENV}); KCE_* variables override it",
        )
        command.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], default=None)
        if name == "serve":
            command.add_argument("--host", default=None, help="listen address (default: web.host)")
            command.add_argument("--port", type=int, default=None, help="listen port (default: web.port)")
        if name in ("serve", "check-config"):
            command.add_argument(
                "--web.config.file",
                dest="web_config_file",
                type=Path,
                default=None,
                help="exporter-toolkit web config: TLS, client certificates, basic auth (default: web.config_file)",
            )
    inventory = commands.add_parser("inventory", help="fleet inventory from broker request logs, on Spark")
    add_inventory_arguments(inventory)
    return parser


def _setup_logging(level: str) -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    # kafka-python logs every reconnect attempt at WARNING; our own per-broker state lines say it once.
    logging.getLogger("kafka").setLevel(max(logging.getLevelName(level), logging.ERROR))


async def _serve(settings: Settings, policy: Policy, host: str, port: int, serving: WebServing) -> None:
    exposition = Exposition(settings.collection.network_processor_label)
    collection = CollectionLoop(settings, publish=exposition.publish, policy=policy)
    stop = asyncio.Event()
    task = asyncio.create_task(collection.run_forever(stop))
    app = make_app(exposition, lambda: not task.done(), security_middlewares(serving))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port, ssl_context=serving.ssl_context).start()
    log.info("kafka-client-exporter %s serving %s://%s:%d/metrics", __version__, serving.scheme, host, port)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("stopping")
    task.cancel()  # kills JMX JVMs still running
    await asyncio.gather(task, return_exceptions=True)
    await runner.cleanup()
    await asyncio.to_thread(collection.close)


async def _collect_once(settings: Settings, policy: Policy) -> int:
    collection = CollectionLoop(settings, policy=policy)
    try:
        snapshot = await collection.run_cycle()
    finally:
        await asyncio.to_thread(collection.close)
    sys.stdout.write(render_snapshot(snapshot, False, settings.collection.network_processor_label).decode())
    # Per-broker sources: a cluster polled over JMX, the protocol or both.
    polled = [r for r in snapshot.results if r.key.source in (SourceName.JMX, SourceName.API_VERSIONS)]
    if not any(r.ok for r in polled):
        log.error("every broker failed (%d polls)", len(polled))
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "inventory":  # needs no exporter config; imports pyspark only here
        from exporter.request_logs.cli import run as run_inventory

        return run_inventory(args)
    try:
        settings = load_settings(args.config)
        web_config_file = getattr(args, "web_config_file", None) or settings.web.config_file
        serving = load_web_config(web_config_file) if args.command != "collect-once" else WebServing()
        policy = load_policy(settings.policy_file)
    except (ConfigError, PolicyError) as exc:
        print(f"kafka-client-exporter: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    _setup_logging(args.log_level or settings.log_level)
    if args.command == "check-config":
        brokers = sum(len(c.brokers or ()) for c in settings.clusters)
        discovered = [c.name for c in settings.clusters if c.brokers is None]
        print(
            f"configuration OK: {len(settings.clusters)} cluster(s), {brokers} broker(s) listed"
            + (f", brokers discovered for {', '.join(discovered)}" if discovered else "")
            + f"; {serving.describe()}"
        )
        return 0
    if args.command == "collect-once":
        return asyncio.run(_collect_once(settings, policy))
    host = args.host or settings.web.host
    port = args.port if args.port is not None else settings.web.port
    asyncio.run(_serve(settings, policy, host, port, serving))
    return 0


if __name__ == "__main__":
    sys.exit(main())
