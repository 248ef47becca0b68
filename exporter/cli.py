"""Command line: `serve`, `check-config`, `collect-once` and `inventory`, one function each (see COMMANDS)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from exporter import __version__
from exporter.collection import CollectionLoop
from exporter.config.schema import ConfigError
from exporter.config.settings import Settings, load_settings
from exporter.config.web_config import WebServing, load_web_config
from exporter.policy import Policy, PolicyError, load_policy
from exporter.request_logs.cli import add_arguments as add_inventory_arguments
from exporter.request_logs.cli import run as run_inventory
from exporter.snapshot import Snapshot, SourceResult
from exporter.sources.base import SourceName
from exporter.web.app import make_app
from exporter.web.exposition import Exposition, render_snapshot
from exporter.web.security import security_middlewares

log = logging.getLogger("exporter")

EXIT_CONFIG = 2
CONFIG_ENV = "KCE_CONFIG_FILE"


# Arguments, in the order --help lists them.


def _config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        default=os.environ.get(CONFIG_ENV),
        help=f"YAML configuration file (default: ${CONFIG_ENV}); KCE_* variables override it",
    )
    parser.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], default=None)


def _listen_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=None, help="listen address (default: web.host)")
    parser.add_argument("--port", type=int, default=None, help="listen port (default: web.port)")


def _web_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--web.config.file",
        dest="web_config_file",
        type=Path,
        default=None,
        help="exporter-toolkit web config: TLS, client certificates, basic auth (default: web.config_file)",
    )


@dataclass(frozen=True)
class _Loaded:
    settings: Settings
    policy: Policy
    serving: WebServing


def _load(args: argparse.Namespace, *, web_config: bool) -> _Loaded | None:
    """Settings, policy and (for the commands that serve HTTP) the web config; None after printing a config error."""
    try:
        settings = load_settings(args.config)
        serving = load_web_config(args.web_config_file or settings.web.config_file) if web_config else WebServing()
        policy = load_policy(settings.policy_file)
    except (ConfigError, PolicyError) as exc:
        print(f"kafka-client-exporter: {exc}", file=sys.stderr)
        return None
    _setup_logging(args.log_level or settings.log_level)
    return _Loaded(settings, policy, serving)


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
    polled = _broker_polls(snapshot)
    if not any(r.ok for r in polled):
        log.error("every broker failed (%d polls)", len(polled))
        return 1
    return 0


def _broker_polls(snapshot: Snapshot) -> list[SourceResult]:
    # Per-broker sources: a cluster polled over JMX, the protocol or both.
    return [r for r in snapshot.results if r.key.source in (SourceName.JMX, SourceName.API_VERSIONS)]


def serve(args: argparse.Namespace) -> int:
    loaded = _load(args, web_config=True)
    if loaded is None:
        return EXIT_CONFIG
    host = args.host or loaded.settings.web.host
    port = args.port if args.port is not None else loaded.settings.web.port
    asyncio.run(_serve(loaded.settings, loaded.policy, host, port, loaded.serving))
    return 0


def check_config(args: argparse.Namespace) -> int:
    loaded = _load(args, web_config=True)
    if loaded is None:
        return EXIT_CONFIG
    clusters = loaded.settings.clusters
    brokers = sum(len(c.brokers or ()) for c in clusters)
    discovered = [c.name for c in clusters if c.brokers is None]
    print(
        f"configuration OK: {len(clusters)} cluster(s), {brokers} broker(s) listed"
        + (f", brokers discovered for {', '.join(discovered)}" if discovered else "")
        + f"; {loaded.serving.describe()}"
    )
    return 0


def collect_once(args: argparse.Namespace) -> int:
    loaded = _load(args, web_config=False)
    if loaded is None:
        return EXIT_CONFIG
    return asyncio.run(_collect_once(loaded.settings, loaded.policy))


def inventory(args: argparse.Namespace) -> int:
    # Needs no exporter config; pyspark is imported only when the job runs.
    return run_inventory(args)


@dataclass(frozen=True)
class Command:
    """A subcommand: what runs it, its one-line help, and what adds its arguments (in --help order)."""

    run: Callable[[argparse.Namespace], int]
    help: str
    arguments: tuple[Callable[[argparse.ArgumentParser], None], ...]


# Adding a command: a function above and a row here.
COMMANDS: dict[str, Command] = {
    "serve": Command(
        serve,
        "collect in the background and serve /metrics",
        (_config_arguments, _listen_arguments, _web_config_argument),
    ),
    "check-config": Command(
        check_config,
        "validate the configuration without connecting to anything",
        (_config_arguments, _web_config_argument),
    ),
    "collect-once": Command(
        collect_once,
        "run one collection cycle, print the exposition, exit (1 when every broker failed)",
        (_config_arguments,),
    ),
    "inventory": Command(inventory, "fleet inventory from broker request logs, on Spark", (add_inventory_arguments,)),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-client-exporter",
        description="Prometheus exporter of the client software and versions connected to Kafka brokers.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        subparser = subparsers.add_parser(name, help=command.help)
        for add_arguments in command.arguments:
            add_arguments(subparser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return COMMANDS[args.command].run(args)


if __name__ == "__main__":
    sys.exit(main())
