# agentrt's image: the `agentrt` console script and nothing else. docker-compose.yml
# runs it twice, as `agentrt api --hostname 0.0.0.0` and as `agentrt worker`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src

# Dependencies first, from pyproject.toml alone, so a source change reuses this layer.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# Then the project itself (.dockerignore keeps the venv, tests and local data out).
COPY . .
RUN pip install --no-deps . \
    && cd / && rm -rf /src

# An unprivileged user owning the only writable places: the data dir and the workspace.
RUN groupadd --system --gid 10001 agentrt \
    && useradd --system --uid 10001 --gid agentrt --home-dir /var/lib/agentrt \
       --shell /usr/sbin/nologin agentrt \
    && mkdir -p /var/lib/agentrt/data /workspace \
    && chown -R agentrt:agentrt /var/lib/agentrt /workspace

USER agentrt
WORKDIR /workspace
ENV AGENTRT_DATA_DIR=/var/lib/agentrt/data \
    AGENTRT_WORKSPACE=/workspace

EXPOSE 4170
ENTRYPOINT ["agentrt"]
CMD ["--help"]
