"""XGBoost cost model (TVM's ``XGBoostCostModel``), with transfer learning from old logs.

Training uses TVM's parameters and stops when the average recall of the top ``plan_size``
predictions (``a-recall@N``) has not improved for 20 rounds (evaluated every 2nd round).

Transfer learning: a *base model* trained on earlier records of the same template (this task's
and other tasks' of the template, each workload's FLOPS scaled by its best) plans the first
trials; afterwards every fit trains on those records and the task's own measurements together,
the records weighted ``1 / 2**(n / 64)`` after ``n`` own measurements (TVM's discount of its
base model's margin) and dropped once that weight is below 0.05.  Training on both, rather than
boosting the own data on the base model's margin as TVM does, lets a handful of own
measurements re-rank what the other shapes taught; every row of such a model ends with its
task's ``workload_features`` (shapes and FLOP count), so the trees can give the task's own
measurements leaves of their own where its best configs differ from the other shapes' (figures
in ``benchmarks/README.md``).
xgboost is imported when a model is created, with an actionable message when it is missing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable, Iterable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from tunecli.engine.tuner.features import (
    FEATURE_TYPES,
    config_features,
    get_features,
    transfer_features,
    workload_features,
)
from tunecli.engine.tuner.model_based_tuner import CostModel
from tunecli.errors import TuneError

if TYPE_CHECKING:
    import xgboost

    from tunecli.engine.log.record import Record
    from tunecli.engine.measure.result import MeasureInput
    from tunecli.engine.task.task import Task

logger = logging.getLogger("autotvm")

LOSS_TYPES = ("reg", "rank", "rank-binary")
_CACHE_LIMIT = 100_000


def _import_xgboost() -> ModuleType:
    try:
        import xgboost
    except ImportError as err:
        raise ImportError("XGBTuner needs the xgboost package: install it with "
                          "`pip install xgboost-cpu` (a dependency of tunecli)") from err
    return xgboost


def get_rank(values: np.ndarray) -> np.ndarray:
    """Return the rank of every value (0 = largest).

    Parameters
    ----------
    values : numpy.ndarray

    Returns
    -------
    numpy.ndarray of int
    """
    order = np.argsort(-values, kind="stable")
    ranks = np.empty_like(order)
    ranks[order] = np.arange(len(order))
    return ranks


def average_recall(preds: np.ndarray, labels: np.ndarray, n: int) -> float:
    """Return ``a-recall@n``: mean over i < n of the share of the true top-(i+1) among the
    first i predicted trials (TVM's ``recall_curve``).

    Parameters
    ----------
    preds : numpy.ndarray
    labels : numpy.ndarray
    n : int

    Returns
    -------
    float
    """
    trials = np.argsort(preds, kind="stable")[::-1]
    ranks = get_rank(labels[trials])
    curve = [np.sum(ranks[:i] <= i) / (i + 1) for i in range(min(n, len(ranks)))]
    return float(np.sum(curve) / n)


def _fit_width(rows: np.ndarray, width: int) -> np.ndarray:
    """``rows`` zero-padded, or cut, to ``width`` columns (loop-nest rows vary in length)."""
    if rows.shape[1] == width:
        return rows
    out = np.zeros((len(rows), width), dtype=np.float32)
    out[:, : min(width, rows.shape[1])] = rows[:, :width]
    return out


def scale_per_group(values: Sequence[float], groups: Sequence[Hashable]) -> np.ndarray:
    """Return ``values`` divided by the largest value of their group (groups without a positive
    value stay 0).

    Parameters
    ----------
    values : sequence of float
    groups : sequence of hashable
        The group of every value (e.g. its workload).

    Returns
    -------
    numpy.ndarray of float64
    """
    y = np.asarray(values, dtype=np.float64)
    best: dict[Hashable, float] = {}
    for group, value in zip(groups, y, strict=True):
        best[group] = max(best.get(group, 0.0), float(value))
    scale = np.array([best[g] if best[g] > 1e-8 else 1.0 for g in groups], dtype=np.float64)
    return y / scale


class XGBoostCostModel(CostModel):
    """A gradient-boosted-trees model of config quality.

    Parameters
    ----------
    task : Task
    feature_type : {"knob", "itervar", "curve"}
    loss_type : {"reg", "rank", "rank-binary"}
    num_threads : int, optional
    log_interval : int
    upper_model : XGBoostCostModel, optional
        The model this one is the base model of (shares its feature cache).
    rng : numpy.random.Generator, optional
    """

    def __init__(self, task: Task, feature_type: str, loss_type: str = "reg", num_threads: int | None = None,
                 log_interval: int = 25, upper_model: XGBoostCostModel | None = None,
                 rng: np.random.Generator | None = None):
        self.xgb = _import_xgboost()
        if loss_type not in LOSS_TYPES:
            raise TuneError(f"XGBoostCostModel: Invalid loss type: {loss_type} (use one of {LOSS_TYPES})")
        if feature_type not in FEATURE_TYPES:
            raise TuneError(f"XGBoostCostModel: Invalid feature type: {feature_type} "
                            f"(use one of {FEATURE_TYPES})")
        self.task = task
        self.space = task.config_space
        self.fea_type = feature_type
        self.loss_type = loss_type
        self.num_threads = num_threads
        self.log_interval = log_interval
        self.rng = rng if rng is not None else np.random.default_rng()
        self.xgb_params: dict[str, float | int | str] = {
            "max_depth": 3, "gamma": 0.0001, "min_child_weight": 1, "subsample": 1.0, "eta": 0.3,
            "lambda": 1.00, "alpha": 0,
            "objective": "reg:squarederror" if loss_type == "reg" else "rank:pairwise",
            "verbosity": 0, "seed": int(self.rng.integers(2**31)),
        }
        if num_threads:
            self.xgb_params["nthread"] = num_threads
        self._dmatrix_threads = num_threads or -1
        self.bst: xgboost.Booster | None = None
        self.upper_model = upper_model
        self.feature_cache: dict[int, np.ndarray] = upper_model.feature_cache if upper_model else {}
        self.base_model: XGBoostCostModel | None = None
        self.history: tuple[np.ndarray, np.ndarray] = (np.zeros((0, 0), np.float32), np.zeros(0))
        self._sample_size = 0
        self._width: int | None = None  # feature columns of the trained booster
        #: this task's ``workload_features``, ending every row once the model learns from other tasks
        self.context: np.ndarray | None = None

    # ----------------------------------------------------------------- features
    def _get_feature(self, indexes: Sequence[int], width: int | None = None) -> np.ndarray:
        """Feature rows of ``indexes``; loop-nest rows (whose length depends on the loop nest of
        each config) are zero-padded, or cut, to ``width`` (default: the longest row), the
        workload's ``context`` columns (when the model has them) included."""
        if self.context is None:
            return self._config_features(indexes, width)
        n_context = len(self.context)
        rows = self._config_features(indexes, None if width is None else width - n_context)
        return np.hstack([rows, np.broadcast_to(self.context, (len(rows), n_context))])

    def _config_features(self, indexes: Sequence[int], width: int | None = None) -> np.ndarray:
        """The configs' own feature rows (no context columns); see ``_get_feature``."""
        if self.fea_type == "knob":
            return get_features(self.task, indexes, "knob")
        if len(self.feature_cache) >= _CACHE_LIMIT:
            self.feature_cache.clear()
        need = sorted({int(i) for i in indexes} - self.feature_cache.keys())
        if need:
            for i, row in zip(need, get_features(self.task, need, self.fea_type), strict=True):
                self.feature_cache[i] = row
        rows = [self.feature_cache[int(i)] for i in indexes]
        if width is None:
            width = max((len(r) for r in rows), default=0)
        out = np.zeros((len(rows), width), dtype=np.float32)
        for k, r in enumerate(rows):
            out[k, : min(len(r), width)] = r[:width]
        return out

    def _base_model_discount(self) -> float:
        return 1.0 / (2 ** (self._sample_size / 64.0))

    # ----------------------------------------------------------------- training
    def _train(self, x: np.ndarray, y: np.ndarray, plan_size: int, rounds: int, stopping_rounds: int,
               weight: np.ndarray | None = None) -> xgboost.Booster:
        order = self.rng.permutation(len(x))
        dtrain = self.xgb.DMatrix(x[order], y[order], nthread=self._dmatrix_threads)
        if weight is not None:
            dtrain.set_weight(weight[order])
        labels = y[order]
        if self.loss_type == "rank-binary":
            labels = (labels >= 0.5).astype(np.float64)
        callback = _recall_early_stop(self.xgb, dtrain, labels, plan_size, stopping_rounds, self.log_interval)
        return self.xgb.train(self.xgb_params, dtrain, num_boost_round=rounds, callbacks=[callback])

    def fit(self, xs: Sequence[int], ys: Sequence[float], plan_size: int) -> None:
        """Fit on config indices ``xs`` with FLOPS ``ys`` (see ``CostModel.fit``)."""
        tic = time.time()
        x_train = self._get_feature(xs)
        self._width = x_train.shape[1]
        y_train = np.asarray(ys, dtype=np.float64)
        y_train = y_train / max(float(np.max(y_train)), 1e-8)
        self._sample_size = len(x_train)
        weight = None
        if self.base_model is not None:
            discount = self._base_model_discount()
            if discount < 0.05:
                self.base_model.upper_model = None
                self.base_model = None
            else:
                hist_x, hist_y = self.base_model.history
                x_train = np.vstack([self._align_history(hist_x, x_train.shape[1]), x_train])
                y_train = np.concatenate([hist_y, y_train])
                weight = np.concatenate([np.full(len(hist_x), discount), np.ones(self._sample_size)])
        self.bst = self._train(x_train, y_train, plan_size, 8000, 20, weight)
        logger.debug("XGB train: %.2f\tobs: %d\terror: %d", time.time() - tic, len(xs),
                     int(np.sum(y_train <= 1e-6)))

    def _align_history(self, hist_x: np.ndarray, width: int) -> np.ndarray:
        """History rows (config columns, then context columns) with their config columns padded,
        or cut, to those of ``width``-column rows of this model."""
        n_context = 0 if self.context is None else len(self.context)
        if not n_context:
            return _fit_width(hist_x, width)
        config_part = _fit_width(hist_x[:, :-n_context], width - n_context)
        return np.hstack([config_part, hist_x[:, -n_context:]])

    def fit_log(self, records: Iterable[Record], plan_size: int, min_seed_records: int = 500) -> bool:
        """Train on records of the same template (this task's and other shapes'); False (no model)
        with fewer than ``min_seed_records`` usable records.

        Knob features of other tasks are laid out by knob name (``features.transfer_features``)
        and followed by their task's ``workload_features``; each workload's FLOPS are scaled by
        that workload's best, so that a layer with more arithmetic intensity does not drown the
        ranking the others teach.
        """
        xs, ys, groups = [], [], []
        flop_of: dict[tuple, float | None] = {self.task.workload: self.task.flop}
        task_of: dict[tuple, Task] = {}
        self.context = None
        width = self._get_feature([0]).shape[1]
        for inp, res in records:
            if inp.task.name != self.task.name:
                continue
            try:
                x = self._history_feature(inp)
                y = 0.0
                if res.ok:
                    flop = flop_of.get(inp.task.workload)
                    if flop is None:
                        inp.task.instantiate(inp.config)
                        flop = flop_of[inp.task.workload] = inp.task.flop
                    y = res.flops(flop)
            except Exception as err:  # noqa: BLE001 - a record that cannot be replayed is skipped
                logger.debug("XGB skips a history record: %s", err)
                continue
            if len(x) != width:
                if self.fea_type == "curve":  # another number of buffers: not comparable
                    continue
                x = np.pad(x[:width], (0, max(0, width - len(x))))  # loop nests vary per config
            xs.append(x)
            ys.append(y)
            groups.append(inp.task.workload)
            task_of.setdefault(inp.task.workload, inp.task)
        logger.debug("XGB load %d entries from history log file", len(xs))
        if len(xs) < min_seed_records or not xs:
            return False
        self.context = workload_features(self.task, flop_of[self.task.workload])
        n_context = len(self.context)
        context_of = {w: _fit_width(workload_features(t, flop_of.get(w))[None, :], n_context)[0]
                      for w, t in task_of.items()}
        contexts = np.array([context_of[g] for g in groups], dtype=np.float32).reshape(len(groups), n_context)
        self._width = width + n_context
        self.history = (np.hstack([np.array(xs, dtype=np.float32), contexts]), scale_per_group(ys, groups))
        self.bst = self._train(*self.history, plan_size * 2, 400, 100)
        return True

    def _history_feature(self, inp: MeasureInput) -> np.ndarray:
        """Features of a history record's config in this model's columns."""
        if self.fea_type == "knob":
            return transfer_features(self.space, inp.config)
        return config_features(inp.task, inp.config, self.fea_type)

    def predict(self, xs: Sequence[int], output_margin: bool = False) -> np.ndarray:
        """Return predicted scores of config indices ``xs``."""
        dtest = self.xgb.DMatrix(self._get_feature(xs, self._width), nthread=self._dmatrix_threads)
        return self.bst.predict(dtest, output_margin=output_margin)

    def load_basemodel(self, base_model: CostModel) -> None:
        """Use ``base_model`` as a prior (see ``CostModel.load_basemodel``)."""
        self.base_model = base_model
        base_model.upper_model = self
        self.context = getattr(base_model, "context", None)

    def spawn_base_model(self) -> XGBoostCostModel:
        """Return a new model sharing this one's task, settings and feature cache."""
        return XGBoostCostModel(self.task, self.fea_type, self.loss_type, self.num_threads,
                                self.log_interval, self, self.rng)


def _recall_early_stop(xgb: ModuleType, dmat: xgboost.DMatrix, labels: np.ndarray, n: int,
                       stopping_rounds: int, log_interval: int) -> xgboost.callback.TrainingCallback:
    """Return an xgboost callback that stops when ``a-recall@n`` has not improved for
    ``stopping_rounds`` rounds (evaluated every 2nd round, as TVM does)."""

    class RecallEarlyStop(xgb.callback.TrainingCallback):  # xgboost is only importable lazily
        best_score = -1.0
        best_iteration = 0

        def after_iteration(self, model: xgboost.Booster, epoch: int, evals_log: dict) -> bool:
            if epoch % 2 == 1:
                return False
            score = average_recall(model.predict(dmat, iteration_range=(0, epoch + 1)), labels, n)
            if log_interval and epoch % log_interval == 0:
                logger.debug("XGB iter: %3d\ttr-a-recall@%d: %.6f", epoch, n, score)
            if score > self.best_score:
                self.best_score, self.best_iteration = score, epoch
                return False
            return epoch - self.best_iteration >= stopping_rounds

    return RecallEarlyStop()
