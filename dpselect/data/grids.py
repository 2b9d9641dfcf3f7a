"""Grids: the public grid a histogram engine (Spark) rounds quantile rows to.

:func:`grid_size` cells between the bounds, their left edges (:func:`grid_edges`), the cell of
each value by the arithmetic the engine runs (:func:`grid_cell`) and the widest cell
(:func:`grid_cell_width`, how far rounding a row down to its cell's edge may move it). Public
parameters only.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from ..core.errors import ParameterError

__all__ = ["MAX_CELLS", "grid_cell", "grid_cell_width", "grid_edges", "grid_size"]

#: The most cells of a quantile grid (its counts come back to the driver).
MAX_CELLS = 1 << 20


def grid_size(lo: float, hi: float, resolution: float | None) -> int:
    """``G = ceil((hi - lo) / w)`` cells (``w`` default ``(hi - lo) / 10^6``), 1 to
    :data:`MAX_CELLS`.

    Parameters
    ----------
    lo, hi : float
        The public bounds, ``lo < hi``.
    resolution : float or None
        The grid's cell width ``w > 0`` (checked by the caller); ``None``: ``(hi - lo) / 10^6``.

    Returns
    -------
    int
        The number of cells, at least 1 and at most :data:`MAX_CELLS`.

    Raises
    ------
    ParameterError
        ``hi - lo`` overflows a float.
    """
    if not math.isfinite(hi - lo):
        raise ParameterError(
            f"bounds ({lo:g}, {hi:g}) are too wide for the Spark engine's grid: hi - lo "
            "overflows a float"
        )
    w = float(resolution) if resolution is not None else (hi - lo) / 10**6
    return int(min(MAX_CELLS, max(1, math.ceil((hi - lo) / w))))


def grid_edges(lo: float, hi: float, cells: int) -> npt.NDArray[np.float64]:
    """The left edges ``lo + (hi - lo) j / cells``, ``j = 0..cells-1`` (float).

    Parameters
    ----------
    lo, hi : float
        The public bounds.
    cells : int
        The number of cells (:func:`grid_size`).

    Returns
    -------
    numpy.ndarray of float64
        The ``cells`` left edges, increasing, the first ``lo`` (``hi`` is not included).
    """
    edges: npt.NDArray[np.float64] = lo + (hi - lo) * np.arange(cells, dtype=np.float64) / cells
    return edges


def grid_cell(
    values: npt.NDArray[np.float64], lo: float, hi: float, cells: int
) -> npt.NDArray[np.int64]:
    """The cell of each value, by the arithmetic :func:`grid_counts` runs on Spark.

    Parameters
    ----------
    values : numpy.ndarray of float64
        Numbers (no NaN); each is clamped to ``[lo, hi]`` first.
    lo, hi : float
        The public bounds.
    cells : int
        The number of cells (:func:`grid_size`).

    Returns
    -------
    numpy.ndarray of int64
        For each value the cell ``j`` with ``g_j <= x < g_{j+1}`` (:func:`grid_edges`, the
        last cell closed at ``hi``), in ``0 .. cells - 1``.
    """
    lo, hi = float(lo), float(hi)
    scale = float(cells) / (hi - lo)
    x = np.clip(np.asarray(values, dtype=np.float64), lo, hi)
    with np.errstate(invalid="ignore", over="ignore"):
        raw = np.floor((x - lo) * scale)
    j = np.clip(raw, 0, cells - 1).astype(np.int64)

    def edge(k: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        out: npt.NDArray[np.float64] = lo + (hi - lo) * k.astype(np.float64) / float(cells)
        return out

    down = x < edge(j)
    up = (j < cells - 1) & (x >= edge(j + 1))
    out: npt.NDArray[np.int64] = np.where(down, j - 1, np.where(up, j + 1, j))
    return out


def grid_cell_width(lo: float, hi: float, cells: int) -> float:
    """The widest cell of the float grid (``max g_{j+1} - g_j``, ``g_cells = hi``), rounded
    up: a row rounded down to its cell's left edge moves by less than this. It is ``(hi - lo)
    / cells`` up to rounding, at most the resolution ``w`` unless the grid is capped at
    :data:`MAX_CELLS` (``w < (hi - lo) / 2^20``). Public parameters only.

    Parameters
    ----------
    lo, hi : float
        The public bounds.
    cells : int
        The number of cells (:func:`grid_size`).

    Returns
    -------
    float
        The widest cell's width, two float steps up: how far rounding a row down to its
        cell's edge may move it.
    """
    points = np.append(grid_edges(lo, hi, cells), float(hi))
    widest = float(np.max(np.diff(points)))  # each difference within 2^-53 relative
    return float(np.nextafter(np.nextafter(widest, np.inf), np.inf))
