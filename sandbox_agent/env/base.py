"""The base image of an environment: present locally, pulled, or built from a Dockerfile.

A Dockerfile's image is tagged by a hash of the Dockerfile, its build arguments and the files its
``COPY``/``ADD`` lines take from the context, and rebuilt only when one of them changes.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

from sandbox_agent.env.cache import BASE_REPO
from sandbox_agent.env.model import BaseImage
from sandbox_agent.errors import BuildContextError, EnvBuildError, UserError
from sandbox_agent.sandbox.image import DEFAULT_IMAGE, ensure_image, read_build_events

Say = Callable[[str], None]


def _instructions(text: str) -> list[str]:
    """Dockerfile instructions with line continuations joined and comments dropped."""
    out: list[str] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        out.append(current + line)
        current = ""
    if current:
        out.append(current)
    return out


def copied_sources(dockerfile_text: str) -> list[str]:
    """Context paths that ``COPY``/``ADD`` lines read (``--from`` copies read no context)."""
    sources: list[str] = []
    for line in _instructions(dockerfile_text):
        word, _, rest = line.partition(" ")
        if word.upper() not in ("COPY", "ADD"):
            continue
        rest = rest.strip()
        try:
            args = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
        except (ValueError, json.JSONDecodeError):
            continue
        if any(str(a).startswith("--from") for a in args):
            continue
        args = [str(a) for a in args if not str(a).startswith("--")]
        sources += args[:-1]
    return sources


def inside(root: Path, rel: str, what: str) -> Path:
    """``root / rel`` when it is inside ``root`` with every symlink followed; nothing is read.

    Raises:
        BuildContextError: ``rel`` leaves ``root`` (``..``, an absolute path, a symlink).
    """
    path = root / rel
    if Path(rel).is_absolute() or ".." in Path(rel).parts or not _within(path, root):
        raise BuildContextError(
            f"{what} {rel!r} is outside {root}: a build reads only the repository's own files "
            "(no '..', no absolute path, no symlink leading out)"
        )
    return path


def _within(path: Path, root: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


def _hash_tree(digest: hashlib._Hash, context: Path, pattern: str) -> None:
    """Hash what a ``COPY`` source takes, as Docker takes it: a symlink inside is a link."""
    inside(context, pattern or ".", "COPY/ADD source")
    matches = sorted(context.glob(pattern)) if pattern not in ("", ".", "./") else [context]
    for match in matches:
        inside(context, match.relative_to(context).as_posix(), "COPY/ADD source")
        for path in [match] if not match.is_dir() else sorted(match.rglob("*")):
            rel = path.relative_to(context)
            if ".git" in rel.parts or (path.is_dir() and not path.is_symlink()):
                continue
            digest.update(rel.as_posix().encode() + b"\0")
            if path.is_symlink():  # never followed: Docker copies the link itself
                digest.update(b"link:" + str(path.readlink()).encode())
            elif path.is_file():
                digest.update(hashlib.sha256(path.read_bytes()).digest())


def dockerfile_tag(repo: Path, base: BaseImage) -> str:
    """The tag a Dockerfile base is built under (a hash of what the build reads).

    Raises:
        BuildContextError: the Dockerfile, its context or a ``COPY``/``ADD`` source is outside
            the repository; refused before it is read.
    """
    dockerfile = inside(repo, base.dockerfile, "Dockerfile")
    context = inside(repo, base.context, "build context")
    text = dockerfile.read_text(encoding="utf-8", errors="replace")
    digest = hashlib.sha256(text.encode())
    digest.update(json.dumps(base.build_args, sort_keys=True).encode())
    for source in copied_sources(text):
        _hash_tree(digest, context, source.lstrip("/"))
    return f"{BASE_REPO}:{digest.hexdigest()[:20]}"


def _build_dockerfile(client: docker.DockerClient, repo: Path, base: BaseImage, say: Say) -> str:
    tag = dockerfile_tag(repo, base)
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    except docker.errors.DockerException as e:
        raise EnvBuildError(f"inspecting {tag} failed: {e}", step="base image") from e
    context = (repo / base.context).resolve()
    dockerfile = (repo / base.dockerfile).resolve()
    say(f"building the base image from {base.dockerfile} (context {base.context})")
    try:
        events = client.api.build(
            path=str(context),
            dockerfile=str(dockerfile),
            tag=tag,
            buildargs=base.build_args,
            rm=True,
            forcerm=True,
            decode=True,
        )
        error = read_build_events(events, say, tag)
    except docker.errors.DockerException as e:
        error = str(e)
    if error:
        raise EnvBuildError(
            f"building the base image from {base.dockerfile} failed: {error}",
            step=base.dockerfile,
        )
    return tag


def _pull(client: docker.DockerClient, image: str, why: str, say: Say) -> None:
    try:
        client.images.get(image)
        return
    except docker.errors.ImageNotFound:
        pass
    except docker.errors.DockerException as e:
        raise EnvBuildError(f"inspecting {image} failed: {e}", step="base image") from e
    say(f"pulling the base image {image} ({why})")
    try:
        client.images.pull(image)
    except docker.errors.DockerException as e:
        raise EnvBuildError(
            f"the base image {image} ({why}) is not present and could not be pulled: {e}",
            step="base image",
        ) from e


def resolve_base(client: docker.DockerClient, repo: Path, base: BaseImage, say: Say) -> str:
    """Make the base image present (build, pull) and return its reference (a tag).

    Raises:
        EnvBuildError: the pull or the Dockerfile build failed.
    """
    if base.kind == "dockerfile":
        return _build_dockerfile(client, repo, base, say)
    if base.image == DEFAULT_IMAGE:
        try:
            ensure_image(client, DEFAULT_IMAGE, progress=say)
        except UserError as e:
            raise EnvBuildError(str(e), step="base image") from e
        return DEFAULT_IMAGE
    _pull(client, base.image, base.why, say)
    return base.image


def base_lookup(client: docker.DockerClient, repo: Path, base: BaseImage) -> str | None:
    """The base image's reference if it is already present (no build, no pull)."""
    ref = dockerfile_tag(repo, base) if base.kind == "dockerfile" else base.image
    try:
        client.images.get(ref)
    except docker.errors.DockerException:
        return None
    return ref
