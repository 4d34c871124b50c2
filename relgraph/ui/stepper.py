"""An interactive stepper for Jupyter: apply one rewrite at a time, by clicking.

Needs ipywidgets (``pip install "relgraph[widgets]"``).  The stepper shows the
current term and a button for each one-step rewrite, forward and backward;
back and forward move through the history.  Everything a click does is also a
method, so a stepper can be driven from code (and tested without a browser).

Examples
--------
>>> import relgraph as rg
>>> from relgraph.ui.stepper import Stepper
>>> import relgraph as rg
>>> a, b, c = rg.lvars("a b c")
>>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
>>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
>>> s = Stepper(A @ (x + y), [dot_distributeo])
>>> [str(e) for e in s.options]
['dot_distributeo (forward) at []: (A @ (x + y)) -> ((A @ x) + (A @ y))']
>>> rg.pprint(s.apply(0))
'((A @ x) + (A @ y))'
>>> rg.pprint(s.back())
'(A @ (x + y))'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

try:
    import ipywidgets as widgets
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "relgraph.ui.stepper needs ipywidgets: pip install 'relgraph[widgets]'"
    ) from exc

from relgraph.eqsat.bfs import DIRECTIONS, Direction, Edge, Neighbours
from relgraph.logic.search import run_deep
from relgraph.terms.printing import brief
from relgraph.terms.term import Term
from relgraph.terms.traverse import checked_term
from relgraph.ui.display import term_html

__all__ = ["Stepper"]


class Stepper:
    """Step through the rewrites of a term, one relation at a time.

    Parameters
    ----------
    term : Term
    relations : rewriter, list of relations, or one relation
    directions : iterable of {"forward", "backward"}
    max_answers : int
        Answers of a relation looked at per position.
    """

    def __init__(
        self,
        term: Any,
        relations: Any,
        *,
        directions: Iterable[Direction] = DIRECTIONS,
        max_answers: int = 8,
    ):
        self.neighbours = Neighbours(relations, directions, max_answers)
        self.history: list[Term] = [checked_term(term, "step")]
        self.index = 0
        self._options: dict[Term, tuple[Edge, ...]] = {}
        self._term = widgets.HTML()
        self._status = widgets.Label()
        self._back = widgets.Button(description="back", icon="arrow-left")
        self._forward = widgets.Button(description="forward", icon="arrow-right")
        self._back.on_click(lambda _: self.back())
        self._forward.on_click(lambda _: self.forward())
        self._buttons = widgets.VBox(layout=widgets.Layout(max_height="24em", overflow="auto"))
        self.widget = widgets.VBox(
            [widgets.HBox([self._back, self._forward, self._status]), self._term, self._buttons]
        )
        self._refresh()

    @property
    def term(self) -> Term:
        """The term shown now."""
        return self.history[self.index]

    @property
    def options(self) -> tuple[Edge, ...]:
        """The one-step rewrites of :attr:`term`, one per distinct result."""
        term = self.term
        if term not in self._options:
            first: dict[Term, Edge] = {}
            for edge in run_deep(lambda: list(self.neighbours.steps(term))):
                first.setdefault(edge.target, edge)
            self._options[term] = tuple(first.values())
        return self._options[term]

    def apply(self, i: int) -> Term:
        """Take option ``i``; the steps after the current one are forgotten."""
        options = self.options
        if not 0 <= i < len(options):
            raise IndexError(f"option {i} of {len(options)}: {brief(self.term)} has no such step")
        del self.history[self.index + 1 :]
        self.history.append(options[i].target)
        return self._move(1)

    def back(self) -> Term:
        """The previous term (stays at the first)."""
        return self._move(-1 if self.index > 0 else 0)

    def forward(self) -> Term:
        """The next term of the history (stays at the last)."""
        return self._move(1 if self.index < len(self.history) - 1 else 0)

    def _move(self, by: int) -> Term:
        self.index += by
        self._refresh()
        return self.term

    def _refresh(self) -> None:
        self._term.value = term_html(self.term)
        self._status.value = f"step {self.index} of {len(self.history) - 1}"
        self._back.disabled = self.index == 0
        self._forward.disabled = self.index == len(self.history) - 1
        buttons = []
        for i, edge in enumerate(self.options):
            button = widgets.Button(
                description=str(edge), tooltip=str(edge), layout=widgets.Layout(width="auto")
            )
            button.on_click(lambda _, i=i: self.apply(i))
            buttons.append(button)
        self._buttons.children = buttons

    def _ipython_display_(self) -> None:
        from IPython.display import display  # lazy: only in Jupyter

        display(self.widget)
