"""The spatio-temporal adapter of FactoST (Stage 2, "STA") and its domain-alignment penalty.

Pieces, applied to the backbone's assembled tokens ``h`` of shape ``(B, S, N, d)`` before its encoder layers:

* STMF (spatio-temporal metadata fusion) [official code, v2]: a node embedding and one table per calendar feature,
  projected to ``d`` and mean-pooled over each patch's steps (future patches use the known future calendar).
  Node coordinates enter through a small MLP [reconstructed].
* STF (spatio-temporal filtering) [official code, v2]: three scores per token (spatial
  ``<I_st, W_n node_emb>``, temporal ``<I_st, W_t sum_c time_emb_c>`` with ``W_t`` of size ``e x d`` acting on the
  sum of the calendar embeddings as upstream, and a delayed prototype score over 1..3 patch lags) mixed by
  ``softmax(alpha)``; ``I_st <- I_st * sigmoid(s)``.
* Sparse cross-node mixing [reconstructed, absent in v2]: ``S = rowsoftmax(TopK_row(ReLU(E1 E2^T)))`` with
  ``E1, E2 in R^{N x r}``, ``k`` non-zeros per row (self excluded; all entries tied with the ``k``-th are kept, so
  the adapter is node-permutation equivariant); ``h <- h + S h W_s``.
* Cyclic prototype refinement (CPR, optional, ``refinement=True``) [official code, v2; attention span
  reconstructed]: per calendar feature, a table of learned queries (one per position in the cycle); each token's
  query (its patch's calendar code) attends over the tokens of its own node, and the result is added to the token.
* Target prompt, ``prompt="hda"`` (default) [reconstructed, v1 HDA]: a learned softmax mix of the (frozen) source
  prompts plus a residual, with :func:`alignment_penalty` in training. ``prompt="dspa"`` [official code, v2; the
  name is our reading]: a fresh low-rank target prompt ``W (u v^T) + b`` with ``u = 0`` at the start (so the prompt
  starts at 0), ``v`` uniform, ``W`` Xavier, ``b = 0``; v2 uses it instead of HDA, so no alignment penalty.

Parameters that grow with the number of nodes ``N``: the node embedding (``N * emb_dim``) and ``E1, E2``
(``2 * N * rank``); everything else is independent of ``N``.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

__all__ = ["STAdapter", "alignment_penalty", "topk_interaction"]


def topk_interaction(e1: torch.Tensor, e2: torch.Tensor, k: int) -> torch.Tensor:
    r"""Sparse row-stochastic node interaction (FactoST Stage 2, [reconstructed]).

    :math:`S = \mathrm{rowsoftmax}(\mathrm{TopK}(\mathrm{ReLU}(E_1E_2^\top)))`.

    The diagonal is excluded; each row keeps the entries whose score is at least its ``k``-th largest score and the
    softmax runs over the kept entries only. Ties at the threshold are all kept (the ReLU makes exact ties at zero
    common): a row keeps exactly ``k`` entries when its ``k``-th and ``(k+1)``-th scores differ, and more when
    they tie. Breaking ties by node index instead would make the model depend on the order of the nodes; keeping
    every tied entry makes :math:`S` node-permutation equivariant, :math:`S(PE_1, PE_2) = P S(E_1, E_2) P^\top`.

    Args:
        e1, e2: ``(N, r)`` node factors; :math:`\mathrm{rank}(E_1E_2^\top) \le r`.
        k: neighbours per node, ``1 <= k <= N - 1``.

    Returns:
        ``(N, N)`` dense tensor, zero outside the kept entries, each row summing to 1 over ``>= k`` positive
        entries.

    Raises:
        ValueError: on mismatched shapes or ``k`` out of range.

    Example:
        >>> e = torch.zeros(4, 2)  # every score ties at 0: each row spreads over all 3 other nodes
        >>> topk_interaction(e, e, 1)[0]
        tensor([0.0000, 0.3333, 0.3333, 0.3333])
    """
    if e1.ndim != 2 or e1.shape != e2.shape:
        raise ValueError(f"e1 and e2 must be (N, r) of the same shape, got {tuple(e1.shape)}, {tuple(e2.shape)}")
    n = e1.shape[0]
    if not 1 <= k <= n - 1:
        raise ValueError(f"k must be in [1, N - 1] = [1, {n - 1}], got {k}")
    scores = torch.relu(e1 @ e2.T)
    scores = scores.masked_fill(torch.eye(n, dtype=torch.bool, device=scores.device), float("-inf"))
    threshold = scores.topk(k, dim=1).values[:, -1:]
    kept = scores.masked_fill(scores < threshold, float("-inf"))
    return torch.softmax(kept, dim=1)


def alignment_penalty(target: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    r"""Moment-matching domain alignment [reconstructed, v1 HDA]:
    :math:`\lVert\mu_t - \mu_s\rVert^2 + \lVert C_t - C_s\rVert_F^2 / (4 d^2)`.

    Args:
        target: ``(n_t, d)`` pooled target tokens, ``n_t >= 2``.
        source: ``(n_s, d)`` pooled source (replayed) tokens, ``n_s >= 2``.

    Returns:
        A non-negative 0-d tensor; zero iff means and covariances agree.

    Raises:
        ValueError: on mismatched shapes, fewer than 2 rows, or non-finite values.
    """
    if target.ndim != 2 or source.ndim != 2 or target.shape[1] != source.shape[1]:
        raise ValueError(f"target and source must be (n, d) with the same d, got {tuple(target.shape)}, "
                         f"{tuple(source.shape)}")  # fmt: skip
    if target.shape[0] < 2 or source.shape[0] < 2:
        raise ValueError("target and source need at least 2 rows each")
    if not (torch.isfinite(target).all() and torch.isfinite(source).all()):
        raise ValueError("target and source must be finite")
    d = target.shape[1]
    mu_t, mu_s = target.mean(0), source.mean(0)
    c_t = torch.cov(target.T)
    c_s = torch.cov(source.T)
    return ((mu_t - mu_s) ** 2).sum() + ((c_t - c_s) ** 2).sum() / (4 * d * d)


class STAdapter(nn.Module):
    r"""Spatio-temporal adapter (STMF + STF + sparse mixing + target prompt) for a frozen temporal backbone.

    For tokens :math:`h \in \mathbb{R}^{B \times S \times N \times d}` returns
    :math:`h + S h W_s + I_{st} \odot \sigma(s)` where :math:`I_{st}` fuses node and calendar embeddings and
    :math:`s = \sum_j \mathrm{softmax}(\alpha)_j s_j` mixes the spatial, temporal and delayed scores.
    *[reconstructed]* The STMF projections (``node_proj``, ``time_proj``) and ``W_s`` (``mix_proj``) start at 0, so a
    new adapter is the identity on the tokens and FactoST starts from the backbone's zero-shot forecast (0.2.3;
    before, the initial STMF term disturbed a pretrained backbone: control MAE 1.02 at step 0 vs zero-shot 0.69).

    Args:
        n_nodes: ``N >= 2``.
        d_model: the backbone's width ``d``.
        emb_dim: node / calendar embedding size ``e`` (32).
        calendar: ``{feature: n_categories}`` in the column order of the calendar codes.
        rank: ``r`` of the interaction factors (8).
        topk: neighbours per node; clipped to ``N - 1`` (8).
        mixing: use the sparse cross-node mixing (default on).
        n_prototypes: learned prototypes of the delayed score (8).
        n_shifts: patch lags of the delayed score (3).
        n_source_domains: number of source prompts the target prompt mixes.
        n_prompt_tokens: prompt length (the backbone's ``n_prompt_tokens``).
        coords: optional ``(N, 2)`` node coordinates, standardised and passed through an MLP into the node embedding.
        refinement: add v2's cyclic prototype refinement (CPR) of the tokens (default off).
            Raises TypeError if not a bool.
        refinement_heads: attention heads of CPR (must divide ``d_model``; 4 as upstream, clipped to a divisor).
        prompt: ``"hda"`` (mix of source prompts + alignment penalty, default) or ``"dspa"`` (v2's fresh low-rank
            target prompt, no alignment penalty).

    Example:
        >>> a = STAdapter(n_nodes=4, d_model=8, emb_dim=4, rank=2, topk=2)
        >>> s = a.interaction()  # (N, N): >= k = 2 neighbours per row (more where scores tie at the 2nd)
        >>> bool((s.count_nonzero(dim=1) >= 2).all()), torch.allclose(s.sum(1), torch.ones(4))
        (True, True)
    """

    def __init__(
        self,
        *,
        n_nodes: int,
        d_model: int,
        emb_dim: int = 32,
        calendar: Mapping[str, int] | None = None,
        rank: int = 8,
        topk: int = 8,
        mixing: bool = True,
        n_prototypes: int = 8,
        n_shifts: int = 3,
        n_source_domains: int = 1,
        n_prompt_tokens: int = 3,
        coords: torch.Tensor | None = None,
        refinement: bool = False,
        refinement_heads: int = 4,
        prompt: str = "hda",
    ) -> None:
        super().__init__()
        calendar = {"day_of_week": 7, "month": 12} if calendar is None else dict(calendar)
        for name, value in (("n_nodes", n_nodes), ("d_model", d_model), ("emb_dim", emb_dim), ("rank", rank),
                            ("topk", topk), ("n_prototypes", n_prototypes), ("n_shifts", n_shifts),
                            ("n_source_domains", n_source_domains), ("n_prompt_tokens", n_prompt_tokens)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if n_nodes < 2:
            raise ValueError(f"n_nodes must be >= 2, got {n_nodes}")
        if not isinstance(refinement, bool):
            raise TypeError(f"refinement must be a bool, got {refinement!r}")
        if prompt not in ("hda", "dspa"):
            raise ValueError(f"prompt must be 'hda' or 'dspa', got {prompt!r}")
        if isinstance(refinement_heads, bool) or not isinstance(refinement_heads, int) or refinement_heads < 1:
            raise ValueError(f"refinement_heads must be an integer >= 1, got {refinement_heads!r}")
        if not calendar or any(not isinstance(v, int) or v < 1 for v in calendar.values()):
            raise ValueError(f"calendar must map feature names to category counts >= 1, got {calendar!r}")
        self.n_nodes, self.d_model, self.emb_dim = n_nodes, d_model, emb_dim
        self.calendar_sizes = calendar
        self.k = min(topk, n_nodes - 1)
        self.mixing = bool(mixing)
        self.n_shifts = n_shifts
        e, d = emb_dim, d_model
        self.node_emb = nn.Parameter(torch.randn(n_nodes, e) * 0.1)
        self.time_emb = nn.ModuleList(nn.Embedding(size, e) for size in calendar.values())
        if coords is not None:
            c = torch.as_tensor(coords, dtype=torch.float32)
            if c.shape != (n_nodes, 2) or not torch.isfinite(c).all():
                raise ValueError(f"coords must be finite with shape ({n_nodes}, 2), got {tuple(c.shape)}")
            self.register_buffer("coords", (c - c.mean(0)) / c.std(0).clamp(min=1e-6))
            self.coord_mlp: nn.Module | None = nn.Sequential(nn.Linear(2, e), nn.GELU(), nn.Linear(e, e))
        else:
            self.coords = None
            self.coord_mlp = None
        n_time = e * len(calendar)
        self.node_proj = nn.Linear(e, d)
        self.time_proj = nn.Linear(n_time, d, bias=False)
        self.score_node = nn.Linear(e, d)
        self.score_time = nn.Linear(e, d)  # W_t acts on the sum of the calendar embeddings [official code, v2]
        self.prototypes = nn.Parameter(torch.randn(n_prototypes, d) * 0.1)
        self.gamma = nn.Parameter(torch.zeros(n_shifts))
        self.alpha = nn.Parameter(torch.zeros(3))
        self.e1 = nn.Parameter(torch.randn(n_nodes, rank) * 0.3)
        self.e2 = nn.Parameter(torch.randn(n_nodes, rank) * 0.3)
        self.mix_proj = nn.Linear(d, d, bias=False)
        # 0.2.3: the adapter starts as the identity on the backbone's tokens (STMF projections and the mixing
        # projection at 0), so that stage 2 starts from the frozen backbone's zero-shot forecast; their gradients
        # are not 0 (they multiply the embeddings and the gate), so they move from the first step.
        for layer in (self.node_proj, self.time_proj, self.mix_proj):
            nn.init.zeros_(layer.weight)
        nn.init.zeros_(self.node_proj.bias)
        self.prompt_mode = prompt
        self.n_source_domains = n_source_domains
        if prompt == "hda":
            self.prompt_logits = nn.Parameter(torch.zeros(n_source_domains))
            self.prompt_delta = nn.Parameter(torch.zeros(n_prompt_tokens, d))
        else:  # DSPA: P = W (u v^T) + b, u = 0 at the start [official code, v2]
            self.prompt_u = nn.Parameter(torch.zeros(n_prompt_tokens, 1))
            self.prompt_v = nn.Parameter(torch.rand(1, d))
            self.prompt_proj = nn.Linear(d, d)
            nn.init.xavier_uniform_(self.prompt_proj.weight)
            nn.init.zeros_(self.prompt_proj.bias)
        self.refinement = bool(refinement)
        if self.refinement:
            heads = max(h for h in range(1, min(refinement_heads, d) + 1) if d % h == 0)
            self.cycle_queries = nn.ParameterList(nn.Parameter(torch.randn(size, d) * d**-0.5)
                                                  for size in calendar.values())  # fmt: skip
            self.cycle_attention = nn.ModuleList(nn.MultiheadAttention(d, heads, batch_first=True)
                                                 for _ in calendar)  # fmt: skip

    # -- metadata ------------------------------------------------------------------------------------------------
    def node_embedding(self) -> torch.Tensor:
        """Node embeddings ``(N, e)`` (plus the coordinate MLP when coordinates were given)."""
        if self.coord_mlp is not None and self.coords is not None:
            return self.node_emb + self.coord_mlp(self.coords)
        return self.node_emb

    def pooled_calendar(self, calendar: torch.Tensor, *, context: int, horizon: int, patch_len: int) -> torch.Tensor:
        """Calendar embeddings pooled per token: ``(B, P + 1 + F, C*e)`` aligned with ``[context | REG | future]``.

        Context steps are left-padded like the values (the last patch ends at the forecast origin), future steps
        right-padded; padded steps are excluded from the means; the REG position gets zeros.
        """
        if calendar.ndim != 3 or calendar.shape[1] != context + horizon or calendar.shape[2] != len(self.time_emb):
            raise ValueError(f"calendar must be (B, L + H, C) = (B, {context + horizon}, {len(self.time_emb)}), "
                             f"got {tuple(calendar.shape)}")  # fmt: skip
        if calendar.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"calendar must hold integer codes, got {calendar.dtype}")
        for j, (name, size) in enumerate(self.calendar_sizes.items()):
            col = calendar[..., j]
            if col.numel() and (int(col.min()) < 0 or int(col.max()) >= size):
                raise ValueError(f"calendar feature {name!r} must be in [0, {size}), got [{int(col.min())}, "
                                 f"{int(col.max())}]")  # fmt: skip
        emb = torch.cat([table(calendar[..., j]) for j, table in enumerate(self.time_emb)], dim=-1)
        b, _, c = emb.shape

        def pool(part: torch.Tensor, left: bool) -> torch.Tensor:
            pad = (-part.shape[1]) % patch_len
            valid = torch.ones(b, part.shape[1], 1, dtype=part.dtype, device=part.device)
            spec = (0, 0, pad, 0) if left else (0, 0, 0, pad)
            part, valid = nn.functional.pad(part, spec), nn.functional.pad(valid, spec)
            part = part.reshape(b, -1, patch_len, c).sum(2)
            return part / valid.reshape(b, -1, patch_len, 1).sum(2).clamp(min=1)

        ctx = pool(emb[:, :context], left=True)
        fut = pool(emb[:, context:], left=False)
        return torch.cat([ctx, emb.new_zeros(b, 1, c), fut], dim=1)

    # -- sparse interaction ----------------------------------------------------------------------------------------
    def interaction(self) -> torch.Tensor:
        """The pruned node interaction ``S`` ``(N, N)`` (:func:`topk_interaction`)."""
        return topk_interaction(self.e1, self.e2, self.k)

    # -- prompts ---------------------------------------------------------------------------------------------------
    def target_prompt(self, source_prompts: torch.Tensor) -> torch.Tensor:
        """Target-domain prompt ``(n_tok, d)``.

        HDA: ``sum_s softmax(beta)_s P_s + Delta`` over the source prompts ``(n_src, n_tok, d)``. DSPA: ``W (u v^T) +
        b``, which ignores the source prompts (their shape is still checked).
        """
        if source_prompts.ndim != 3 or source_prompts.shape[0] != self.n_source_domains:
            raise ValueError(f"source_prompts must be ({self.n_source_domains}, n_tok, d), "
                             f"got {tuple(source_prompts.shape)}")  # fmt: skip
        if self.prompt_mode == "dspa":
            return self.prompt_proj(self.prompt_u @ self.prompt_v)
        weights = torch.softmax(self.prompt_logits, 0)
        return torch.einsum("s,std->td", weights, source_prompts) + self.prompt_delta

    # -- cyclic prototype refinement ---------------------------------------------------------------------------------
    def patch_codes(self, calendar: torch.Tensor, *, context: int, horizon: int, patch_len: int) -> torch.Tensor:
        """Calendar code of each token ``(B, S, C)``: the code of its patch's first step (``-1`` for [REG]).

        Context patches are left-padded (the first patch may start with padding: its first real step is used),
        future patches right-padded, as in :meth:`pooled_calendar`.
        """
        b, _, c = calendar.shape
        starts_ctx = [max(0, context - patch_len * (i + 1)) for i in reversed(range(-(-context // patch_len)))]
        starts_fut = [context + patch_len * i for i in range(-(-horizon // patch_len))]
        ctx = calendar[:, starts_ctx]
        fut = calendar[:, starts_fut]
        return torch.cat([ctx, calendar.new_full((b, 1, c), -1), fut], dim=1)

    def refine(self, tokens: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
        r"""Cyclic prototype refinement (CPR) [official code, v2; attention span reconstructed].

        For each calendar feature :math:`f`, the token at position :math:`s` of node :math:`n` queries with
        :math:`Q_f[c_{s}]` (its patch's code) the sequence of its own node's tokens, and the attention output is
        added: :math:`h_{s,n} \leftarrow h_{s,n} + \sum_f \mathrm{MHA}_f(Q_f[c_s], h_{:,n}, h_{:,n})`. The [REG]
        token gets no update. Nodes never attend to each other (space-agnostic).

        Args:
            tokens: ``(B, S, N, d)``.
            codes: ``(B, S, C)`` integer codes (:meth:`patch_codes`; ``-1`` = no query).

        Returns:
            ``(B, S, N, d)``; ``tokens`` unchanged when refinement is off.
        """
        if not self.refinement:
            return tokens
        b, s, n, d = tokens.shape
        if codes.shape != (b, s, len(self.time_emb)):
            raise ValueError(f"codes must be (B, S, C) = ({b}, {s}, {len(self.time_emb)}), got {tuple(codes.shape)}")
        seq = tokens.permute(0, 2, 1, 3).reshape(b * n, s, d)
        update = torch.zeros_like(seq)
        for j, (queries, attention) in enumerate(zip(self.cycle_queries, self.cycle_attention)):
            code = codes[..., j]
            query = queries[code.clamp(min=0)] * (code >= 0)[..., None]  # (B, S, d)
            query = query[:, None].expand(b, n, s, d).reshape(b * n, s, d)
            out = attention(query, seq, seq, need_weights=False)[0]
            update = update + out * (code >= 0)[:, None, :, None].expand(b, n, s, 1).reshape(b * n, s, 1)
        return tokens + update.reshape(b, n, s, d).permute(0, 2, 1, 3)

    # -- forward ---------------------------------------------------------------------------------------------------
    def forward(
        self, tokens: torch.Tensor, calendar: torch.Tensor, *, context: int, horizon: int, patch_len: int
    ) -> torch.Tensor:
        """Adapted tokens ``(B, S, N, d)`` from the backbone's assembled tokens and the window's calendar codes.

        Args:
            tokens: ``(B, S, N, d)`` with ``S = ceil(L/p) + 1 + ceil(H/p)``.
            calendar: ``(B, L + H, C)`` integer codes.
            context, horizon, patch_len: ``L``, ``H``, ``p``.
        """
        if tokens.ndim != 4 or tokens.shape[2] != self.n_nodes or tokens.shape[3] != self.d_model:
            raise ValueError(f"tokens must be (B, S, N={self.n_nodes}, d={self.d_model}), got {tuple(tokens.shape)}")
        d = self.d_model
        time_raw = self.pooled_calendar(calendar, context=context, horizon=horizon, patch_len=patch_len)
        if time_raw.shape[1] != tokens.shape[1]:
            raise ValueError(f"tokens has S={tokens.shape[1]} positions, the calendar gives {time_raw.shape[1]}")
        if self.refinement:
            codes = self.patch_codes(calendar, context=context, horizon=horizon, patch_len=patch_len)
            tokens = self.refine(tokens, codes)
        node = self.node_embedding()
        i_st = self.time_proj(time_raw)[:, :, None, :] + self.node_proj(node)[None, None]  # STMF: (B, S, N, d)
        scale = d**-0.5
        s_node = (i_st * self.score_node(node)[None, None]).sum(-1) * scale
        time_sum = time_raw.reshape(*time_raw.shape[:2], len(self.time_emb), self.emb_dim).sum(2)
        s_time = (i_st * self.score_time(time_sum)[:, :, None, :]).sum(-1) * scale
        s_delay = tokens.new_zeros(tokens.shape[:3])
        for k in range(1, self.n_shifts + 1):
            shifted = nn.functional.pad(tokens[:, :-k], (0, 0, 0, 0, k, 0)) if k < tokens.shape[1] else None
            if shifted is None:
                break
            q = torch.softmax(shifted @ self.prototypes.T * scale, dim=-1) @ self.prototypes
            s_delay = s_delay + nn.functional.softplus(self.gamma[k - 1]) * (tokens * q).sum(-1) * scale
        weights = torch.softmax(self.alpha, 0)
        gate = torch.sigmoid(weights[0] * s_node + weights[1] * s_time + weights[2] * s_delay)
        out = tokens + i_st * gate[..., None]
        if self.mixing:
            out = out + self.mix_proj(torch.einsum("nm,bsmd->bsnd", self.interaction(), tokens))
        return out
