"""Delta jobs' specs as the routes start them: the version-aware job between two versions of a
path, how its job finds a coded base, whether the base is in the relay cache already, and the
background delta a commit starts from the version it superseded."""

from __future__ import annotations

from dataclasses import replace

from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from botocore.exceptions import ClientError
from context import CONFIG, namespace, user

from hycloud_core import jobs, paths
from hycloud_core.delta import level as zlevel
from hycloud_core.errors import HyCloudError
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.jobs.queue import BACKGROUND
from hycloud_core.jobs.specs import DeltaDownloadSpec, DeltaSpec, Source
from hycloud_core.observability import logger
from services.coded_files import coded_base, relay_source
from services.job_runs import RunOptions, delta_bytes, run


def cached(spec: DeltaSpec) -> DeltaSpec:
    """Whether the job finds the base version in the relay cache already, so the workflow skips
    fetching it (the delta task reads the new version itself).

    The client's own base is often still there under the path's name, as the current version of
    an earlier job: it is linked under the base's name (no copy) before the path's entry is replaced.
    """
    cache, new_name = RelayCache(CONFIG.cache_dir), spec.cache_name
    base, base_name = spec.base_hash, spec.base_cache_name
    if base and base_name:
        if cache.link_as(base_name, new_name, base):
            return replace(spec, base_cached=True)
    return spec


def coded_source(link) -> Source:
    """How a job at home rebuilds a coded file from its blocks (nothing for any other)."""
    return Source.from_event(relay_source(link))


def with_coded_base(link, spec: DeltaSpec, inline: bool = True) -> DeltaSpec:
    """The spec with how its job fetches a coded base (`coded_files.coded_base`), when it must."""
    told = coded_base(link, spec.base_hash, spec.to_event(), inline)
    return replace(spec, base_source=Source.from_event(told["base_source"])) if told else spec


def version_job(
    who: str, path: str, new: str, base: str, source: Source, zl: int = zlevel.DEFAULT_LEVEL
) -> tuple[str, DeltaDownloadSpec]:
    """Key and spec of the version-aware delta job from `base` to `new` at `path` at zstd level `zl`;
    `source` says how a coded file is rebuilt from its blocks (empty for any other)."""
    at_level = [] if zl == zlevel.DEFAULT_LEVEL else [f"level {zl}"]  # the default keeps its keys
    key = jobs.job_key("dl", who, path, new, "version", base, *at_level)
    return key, DeltaDownloadSpec(
        level=zl,
        cache_name=paths.cache_name(who, path),
        content_hash=new,
        base_hash=base,
        base_cache_name=jobs.base_cache_name(base),
        source=source,
    )


def precompute(caller: APIGatewayRouter, path: str) -> None:
    """Start the delta from the version a new commit superseded, so a client one version behind
    (the usual download) finds it computed: one request, no job to wait for. Launched, not awaited;
    files over `delta_precompute_bytes` (0: never) are left to be computed on demand."""
    link = namespace(caller).current_link(paths.normalize(path))
    if link is None or not link.history or link.size > CONFIG.delta_precompute_bytes:
        return
    key, spec = version_job(
        user(caller), paths.normalize(path), link.content_hash, link.history[0][0], coded_source(link)
    )
    try:
        spec = cached(with_coded_base(link, spec, inline=False))
        size = delta_bytes(spec, link.size)  # background: behind the transfers users wait for
        run(caller, key, spec, RunOptions(CONFIG.delta_state_machine, size=size, priority=BACKGROUND))
    except (HyCloudError, ClientError):
        logger.warning("delta precompute not started", exc_info=True)  # computed on demand instead
