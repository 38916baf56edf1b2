"""FIFO realized P&L from fills."""

from collections import defaultdict, deque


def realized(fills):
    """Per-symbol realized P&L and closed-lot results, matching sells to buys first in,
    first out. ``fills`` are dicts with date, symbol, side, qty, price, fee, in date order."""
    lots = defaultdict(deque)
    pnl = defaultdict(float)
    closed = []
    for f in fills:
        qty, price = float(f["qty"]), float(f["price"])
        pnl[f["symbol"]] -= float(f.get("fee") or 0)
        if f["side"] == "buy":
            lots[f["symbol"]].append([qty, price])
            continue
        while qty > 1e-12:
            if not lots[f["symbol"]]:
                raise ValueError(f"{f['date']}: sell of {f['symbol']} without an open lot")
            lot = lots[f["symbol"]][0]
            take = min(qty, lot[0])
            result = take * (price - lot[1])
            pnl[f["symbol"]] += result
            closed.append(result)
            lot[0] -= take
            qty -= take
            if lot[0] <= 1e-12:
                lots[f["symbol"]].popleft()
    open_lots = {s: sum(q for q, _ in d) for s, d in lots.items() if d}
    return dict(pnl), closed, open_lots
