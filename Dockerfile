# syntax=docker/dockerfile:1
# kafka-client-exporter: Python slim plus a headless JRE (the JMX queries run a short-lived JVM each).
#   docker build -t kafka-client-exporter .
#   docker build --target inventory -t kafka-client-exporter-inventory .   # the Spark inventory job (Helm CronJob)
#   docker run -v $PWD/exporter.yaml:/etc/kafka-client-exporter/config.yaml:ro -p 9784:9784 kafka-client-exporter
# Without a registry, scripts/build-image.sh builds it with buildah on a Debian bookworm base made by mmdebstrap
# (PYTHON_IMAGE=localhost/...): any Debian-based image with python3.11, venv and `python` on PATH will do.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# Build stages: compilers only here, for dependencies without a wheel on the target platform. The dependencies'
# wheels are built from pyproject.toml alone, in layers of their own: a change to the code rebuilds only the
# project's own wheel, not pyspark's from its sdist (minutes).
FROM ${PYTHON_IMAGE} AS build-base
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
ENV VENV=/opt/kafka-client-exporter \
    WHEELS=/tmp/wheels \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml ./
# >>> install: tests/deployment/image/test_dockerfile_install.py runs exactly these RUN lines in a fresh venv; keep them plain.
RUN python -m venv "$VENV"
RUN python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' > requirements.txt
RUN "$VENV/bin/pip" wheel --no-cache-dir --wheel-dir "$WHEELS" -r requirements.txt
# <<< install

# The exporter's venv.
FROM build-base AS build
COPY README.md ./
COPY exporter/ exporter/
# >>> install
RUN "$VENV/bin/pip" wheel --no-cache-dir --no-deps --wheel-dir "$WHEELS" .
RUN "$VENV/bin/pip" install --no-cache-dir --no-index --find-links "$WHEELS" kafka-client-exporter
# <<< install

# The inventory job's venv: the exporter's plus the `inventory` extra (pyspark, whose sdist becomes a wheel here).
# Its own stage, so that the exporter image (the last stage) never waits for it. --use-pep517: Debian's pip 23.0
# would otherwise run the sdist's `setup.py bdist_wheel`, which needs the `wheel` package a fresh venv lacks.
FROM build-base AS inventory-build
# >>> install
RUN python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["inventory"]))' > inventory-requirements.txt
RUN "$VENV/bin/pip" wheel --no-cache-dir --use-pep517 --wheel-dir "$WHEELS" -r inventory-requirements.txt
# <<< install
COPY README.md ./
COPY exporter/ exporter/
# >>> install
RUN "$VENV/bin/pip" wheel --no-cache-dir --no-deps --wheel-dir "$WHEELS" .
RUN "$VENV/bin/pip" install --no-cache-dir --no-index --find-links "$WHEELS" "kafka-client-exporter[inventory]"
# <<< install

# What both images run on: a JRE (JMX queries; Spark 4 needs Java 17+), no compilers, a non-root user. One stage,
# so the two images share these layers.
FROM ${PYTHON_IMAGE} AS runtime
# Debian slim images drop the man directories the JRE's post-install links into.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin exporter
ENV VENV=/opt/kafka-client-exporter
# No .pyc writes at run time: the root filesystem is read-only in the Helm chart.
ENV PATH=/opt/kafka-client-exporter/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# The inventory job (docker build --target inventory): the Helm chart's CronJob runs
# `kafka-client-exporter inventory --incremental ...` in it.
FROM runtime AS inventory
COPY --from=inventory-build /opt/kafka-client-exporter /opt/kafka-client-exporter
ARG PYTHON_IMAGE
ARG VERSION=unknown
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="kafka-client-exporter-inventory" \
      org.opencontainers.image.description="Who runs which Kafka client version: the Spark job over broker request logs" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="https://github.com/kafka-client-exporter/kafka-client-exporter" \
      org.opencontainers.image.url="https://github.com/kafka-client-exporter/kafka-client-exporter" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"
USER 10001:10001
ENTRYPOINT ["kafka-client-exporter"]
CMD ["inventory", "--help"]

# Final stage (the default target): the exporter's venv on the runtime.
FROM runtime
COPY --from=build /opt/kafka-client-exporter /opt/kafka-client-exporter
# OCI annotations (image-spec annotations.md); scripts/build-image.sh passes the version, commit and time. Last,
# so that a new time or commit does not invalidate the cached layers above.
ARG PYTHON_IMAGE
ARG VERSION=unknown
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="kafka-client-exporter" \
      org.opencontainers.image.description="Which Kafka client software and version is connected to every broker" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="https://github.com/kafka-client-exporter/kafka-client-exporter" \
      org.opencontainers.image.url="https://github.com/kafka-client-exporter/kafka-client-exporter" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"
USER 10001:10001
EXPOSE 9784
ENTRYPOINT ["kafka-client-exporter"]
CMD ["serve", "--config", "/etc/kafka-client-exporter/config.yaml"]
