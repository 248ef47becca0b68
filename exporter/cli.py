"""Command line: `serve`, `check-config`, `collect-once` and `inventory`, one function each (see COMMANDS)."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import shutil
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast, get_args

from aiohttp import web

from exporter import __version__
from exporter.collection import CollectionLoop
from exporter.config.schema import ConfigError
from exporter.config.settings import (
    LOG_LEVELS,
    LogFormat,
    LogLevel,
    Settings,
    check_telemetry_path,
    load_settings,
    normalise_log_level,
)
from exporter.config.web_config import WebServing, load_web_config
from exporter.logging_config import setup_logging
from exporter.policy import Policy, PolicyError, load_policy
from exporter.request_logs.cli import add_arguments as add_inventory_arguments
from exporter.request_logs.cli import run as run_inventory
from exporter.snapshot import Snapshot, SourceResult
from exporter.sources.base import SourceName
from exporter.web.app import make_app
from exporter.web.exposition import Exposition, render_snapshot
from exporter.web.listen_address import ListenAddress, format_listen_address, parse_listen_address
from exporter.web.live_config import LiveWebConfig, live_ssl_context
from exporter.web.security import security_middlewares

log = logging.getLogger("exporter")

EXIT_CONFIG = 2
#: Start-up failed for a reason outside the configuration (the listen address, the Java runtime).
EXIT_STARTUP = 1
CONFIG_ENV = "KCE_CONFIG_FILE"


# Arguments, in the order --help lists them.


def _log_level(value: str) -> LogLevel:
    level = normalise_log_level(value)
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{value!r} is not a log level; allowed: {', '.join(LOG_LEVELS)}")
    return cast(LogLevel, level)


def _config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        default=os.environ.get(CONFIG_ENV),
        help=f"YAML configuration file (default: ${CONFIG_ENV}); KCE_* variables override it",
    )
    parser.add_argument(
        "--log.level",
        "--log-level",
        dest="log_level",
        type=_log_level,
        default=None,
        metavar="LEVEL",
        help=f"{' | '.join(LOG_LEVELS)}; upper case and WARNING work too (default: log_level, info)",
    )
    parser.add_argument(
        "--log.format",
        dest="log_format",
        choices=get_args(LogFormat),
        default=None,
        help="log line format (default: log_format, logfmt)",
    )


def _listen_address(value: str) -> ListenAddress:
    try:
        return parse_listen_address(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _listen_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--web.listen-address",
        dest="listen_address",
        type=_listen_address,
        default=None,
        metavar="[HOST]:PORT",
        help="address to listen on: host:port, :port (every interface) or [IPv6]:port (default: web.host:web.port)",
    )
    parser.add_argument("--host", default=None, help="listen host; an alias of the host in --web.listen-address")
    parser.add_argument(
        "--port", type=int, default=None, help="listen port; an alias of the port in --web.listen-address"
    )
    parser.add_argument(
        "--web.telemetry-path",
        dest="telemetry_path",
        default=None,
        metavar="PATH",
        help="path under which to serve the metrics (default: web.telemetry_path, /metrics)",
    )


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
    setup_logging(args.log_level or settings.log_level, args.log_format or settings.log_format)
    return _Loaded(settings, policy, serving)


@dataclass(frozen=True)
class _Listen:
    address: ListenAddress
    telemetry_path: str
    web_config_file: Path | None


class StartupError(Exception):
    """Serving cannot start for a reason outside the configuration; phrased for the operator, in one line."""


# Why a listen address cannot be bound, in the words an operator acts on.
_BIND_HINTS = {
    errno.EADDRINUSE: "another process is listening there; stop it or choose another --web.listen-address",
    errno.EADDRNOTAVAIL: "no network interface of this machine has that address",
    errno.EACCES: "ports below 1024 need privileges; choose a higher port",
}


def _bind_error(address: ListenAddress, exc: OSError) -> StartupError:
    # asyncio wraps the socket's error in a sentence of its own; the errno says what happened.
    reason = os.strerror(exc.errno) if exc.errno and exc.errno > 0 else (exc.strerror or str(exc))
    hint = _BIND_HINTS.get(exc.errno or 0)
    return StartupError(
        f"cannot listen on {format_listen_address(address)}: {reason.lower()}" + (f" ({hint})" if hint else "")
    )


def _missing_java(settings: Settings) -> StartupError | None:
    """JMX polls run a JVM: without one each would fail on every cycle, so the exporter says so once, at start."""
    clusters = [cluster.name for cluster in settings.clusters if cluster.polls_jmx]
    if not clusters or shutil.which(settings.java.path) is not None:
        return None
    where = "" if os.sep in settings.java.path else " on PATH"
    return StartupError(
        f"java executable {settings.java.path!r} not found{where}; the JMX polls of cluster(s) {', '.join(clusters)} "
        "need a Java runtime: install one, or set java.path (KCE_JAVA__PATH)"
    )


async def _serve(settings: Settings, policy: Policy, listen: _Listen, serving: WebServing) -> None:
    exposition = Exposition(settings.collection.network_processor_label, settings.collection.stale_after_seconds)
    collection = CollectionLoop(
        settings, publish=exposition.publish, policy=policy, count_failed_cycle=exposition.count_failed_cycle
    )
    stop = asyncio.Event()
    task: asyncio.Task[None] | None = None
    web_config = LiveWebConfig(listen.web_config_file, serving)
    app = make_app(
        exposition,
        lambda: task is not None and not task.done(),
        security_middlewares(web_config),
        listen.telemetry_path,
    )
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    host, port = listen.address
    # Bound before the first poll, so that an address in use is the only thing a failed start prints.
    try:
        await web.TCPSite(runner, host, port, ssl_context=live_ssl_context(web_config)).start()
    except OSError as exc:
        await runner.cleanup()
        await asyncio.to_thread(collection.close)
        raise _bind_error(listen.address, exc) from exc
    task = asyncio.create_task(collection.run_forever(stop))
    log.info(
        "kafka-client-exporter %s serving %s://%s%s",
        __version__,
        serving.scheme,
        format_listen_address(listen.address),
        listen.telemetry_path,
    )
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


def _listen(args: argparse.Namespace, settings: Settings) -> _Listen:
    """Where and what to serve: the flags, else the settings. ConfigError for flags that contradict each other."""
    if args.listen_address is not None and (args.host is not None or args.port is not None):
        raise ConfigError("give --web.listen-address or its aliases --host/--port, not both")
    address = args.listen_address or (
        args.host or settings.web.host,
        args.port if args.port is not None else settings.web.port,
    )
    try:
        telemetry_path = check_telemetry_path(args.telemetry_path or settings.web.telemetry_path)
    except ValueError as exc:
        raise ConfigError(f"--web.telemetry-path: {exc}") from None
    return _Listen(address, telemetry_path, args.web_config_file or settings.web.config_file)


def serve(args: argparse.Namespace) -> int:
    loaded = _load(args, web_config=True)
    if loaded is None:
        return EXIT_CONFIG
    try:
        listen = _listen(args, loaded.settings)
    except ConfigError as exc:
        print(f"kafka-client-exporter: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        if (problem := _missing_java(loaded.settings)) is not None:
            raise problem
        asyncio.run(_serve(loaded.settings, loaded.policy, listen, loaded.serving))
    except StartupError as exc:
        return _startup_failed(exc)
    return 0


def _startup_failed(exc: StartupError) -> int:
    log.debug("start-up failed", exc_info=exc)  # the traceback, for --log.level debug only
    print(f"kafka-client-exporter: {exc}", file=sys.stderr)
    return EXIT_STARTUP


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
    if (problem := _missing_java(loaded.settings)) is not None:
        return _startup_failed(problem)
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
