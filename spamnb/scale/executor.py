"""Where the map steps run, chosen once: this machine's worker processes (`--jobs`) or a
Dask cluster (`--dask ADDRESS`).  Started on the mail a command names, either executor
runs the same three operations: learn, classify, tokenise labelled mail (for eval).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from spamnb.mail.sources import Item, Located, Problem
from spamnb.models.model import Model, Scored
from spamnb.run import classifier
from spamnb.scale import cluster
from spamnb.text.tokens import TokenSettings

if TYPE_CHECKING:
    from distributed import Client

Progress = Callable[[int], None] | None
# Work of the caller's while the calibration's folds are scored (classifier.finish_learning).
Meanwhile = Callable[[], object] | None


class Mail(NamedTuple):
    """The mail a command names: `names` as given (`-` for stdin), `read(max_bytes)` its
    messages read by this process, `locate()` its files for a cluster's workers to read."""

    names: tuple[str, ...]
    read: Callable[[int], Iterable[Item]]
    locate: Callable[[], Iterable[Located | Problem]]


class Local(NamedTuple):
    """The map steps on `jobs` forked processes of this machine (`run/parallel`)."""

    jobs: int

    @contextlib.contextmanager
    def started(self, mail: Mail) -> Iterator[LocalRun]:
        yield LocalRun(self.jobs, mail.read)


class LocalRun(NamedTuple):
    jobs: int
    read: Callable[[int], Iterable[Item]]

    def learn(self, model: Model, forget: bool, progress: Progress, meanwhile: Meanwhile = None) -> classifier.LearnReport:
        return classifier.learn(model, self.read(model.tokens.max_bytes), forget=forget, progress=progress, jobs=self.jobs, meanwhile=meanwhile)

    def classify(self, model: Model, progress: Progress) -> Iterator[Scored | Problem]:
        return classifier.classify(model, self.read(model.tokens.max_bytes), progress=progress, jobs=self.jobs)

    def tokenise_labelled(self, tokens: TokenSettings, progress: Progress, numeric: bool) -> classifier.Tokenised:
        return classifier.tokenise_labelled(self.read(tokens.max_bytes), tokens, progress=progress, jobs=self.jobs, numeric=numeric)


class Cluster(NamedTuple):
    """The map steps on the Dask cluster at `address` (`local`: a LocalCluster of `jobs` workers)."""

    address: str
    jobs: int

    @contextlib.contextmanager
    def started(self, mail: Mail) -> Iterator[ClusterRun]:
        located = mail.locate()  # the sources are checked before connecting
        with cluster.connect(self.address, self.jobs) as client:
            yield ClusterRun(self.jobs, client, located)


class ClusterRun(NamedTuple):
    """`LocalRun`'s operations on a cluster's workers."""

    jobs: int
    client: Client
    located: Iterable[Located | Problem]

    def learn(self, model: Model, forget: bool, progress: Progress, meanwhile: Meanwhile = None) -> classifier.LearnReport:
        return cluster.learn(self.client, model, self.located, forget=forget, progress=progress, jobs=self.jobs, meanwhile=meanwhile)

    def classify(self, model: Model, progress: Progress) -> Iterator[Scored | Problem]:
        return cluster.classify(self.client, model, self.located, progress=progress, jobs=self.jobs)

    def tokenise_labelled(self, tokens: TokenSettings, progress: Progress, numeric: bool) -> classifier.Tokenised:
        return cluster.tokenise_labelled(self.client, self.located, tokens, progress=progress, jobs=self.jobs, numeric=numeric)


def choose(dask_address: str | None, jobs: int, mail: Mail) -> Local | Cluster:
    """`Local(jobs)` without --dask; else a Cluster, once the checks that need no
    connection pass (the workers cannot read this process's stdin; Dask is installed)."""
    if dask_address is None:
        return Local(jobs)
    cluster.refuse_stdin(mail.names)
    cluster.require()
    return Cluster(dask_address, jobs)
