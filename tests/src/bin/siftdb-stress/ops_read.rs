//! Reads under the keys' locks: get, get_pinned, multi_get, bounded and prefix iterators in
//! both directions, and a raw cursor's seeks and steps.

use std::ops::Bound;

use rand::Rng;
use siftdb::{DbIterator, ReadOptions};

use crate::expected::Allowed;
use crate::ops::Worker;
use crate::values::{key_name, parse_key, KEYSPACES};

/// A get (or get_into, or get_opt without filling the cache).
pub fn get(w: &mut Worker) {
    let ctx = w.ctx;
    let (ks, key) = (w.pick_ks(), w.pick_key());
    let _held = ctx.locks.lock(&[(ks, key)]);
    let handle = &ctx.ks[ks];
    let got = match w.rng.gen_range(0..3) {
        0 => handle.get(key_name(key)),
        1 => {
            let mut buf = vec![7u8; 3];
            handle
                .get_into(key_name(key), &mut buf)
                .map(|found| found.then_some(buf))
        }
        _ => {
            let opts = ReadOptions {
                fill_cache: false,
                ..ReadOptions::default()
            };
            handle.get_opt(key_name(key), &opts)
        }
    };
    w.checker().read("get", ks, key, got);
}

/// A get_pinned.
pub fn get_pinned(w: &mut Worker) {
    let ctx = w.ctx;
    let (ks, key) = (w.pick_ks(), w.pick_key());
    let _held = ctx.locks.lock(&[(ks, key)]);
    let got = ctx.ks[ks].get_pinned(key_name(key));
    w.checker().read("get_pinned", ks, key, got);
}

/// A multi_get of 2 to 16 keys of one keyspace.
pub fn multi_get(w: &mut Worker) {
    let ctx = w.ctx;
    let ks = w.pick_ks();
    let n = w.rng.gen_range(2..=16);
    let mut keys: Vec<u32> = (0..n).map(|_| w.pick_key()).collect();
    keys.sort_unstable();
    keys.dedup();
    let pairs: Vec<(usize, u32)> = keys.iter().map(|&k| (ks, k)).collect();
    let _held = ctx.locks.lock(&pairs);
    // Asked in a shuffled order: answers come back in the order asked.
    let mut asked = keys.clone();
    for i in (1..asked.len()).rev() {
        asked.swap(i, w.rng.gen_range(0..=i));
    }
    let names: Vec<Vec<u8>> = asked.iter().map(|&k| key_name(k)).collect();
    let answers = ctx.ks[ks].multi_get(&names);
    for (&key, got) in asked.iter().zip(answers) {
        let before = ctx
            .stats
            .mismatches
            .load(std::sync::atomic::Ordering::Relaxed);
        w.checker().read("multi_get", ks, key, got);
        if ctx
            .stats
            .mismatches
            .load(std::sync::atomic::Ordering::Relaxed)
            > before
        {
            // For the report: what the other read paths answer for the key now.
            let max = ctx.exp.max_value();
            let show = |r: siftdb::Result<Option<Vec<u8>>>| match r {
                Ok(v) => crate::verify::describe_got(ks, key, max, v.as_deref()),
                Err(e) => format!("error: {e}"),
            };
            eprintln!(
                "  get of the key now: {}",
                show(ctx.ks[ks].get(key_name(key)))
            );
            let alone = ctx.ks[ks]
                .multi_get(&[key_name(key)])
                .pop()
                .unwrap_or(Ok(None));
            eprintln!("  multi_get of the key alone now: {}", show(alone));
            let again = ctx.ks[ks].multi_get(&names);
            let i = asked.iter().position(|&k| k == key).unwrap_or(0);
            let again = again.into_iter().nth(i).unwrap_or(Ok(None));
            eprintln!(
                "  the same multi_get again: {} (asked: {:?})",
                show(again),
                asked
            );
        }
    }
}

/// An iterator over a locked run of keys: a range with included or excluded ends, or a prefix;
/// walked forward, backward, from both ends, or after a seek.
pub fn iterate(w: &mut Worker) {
    let ctx = w.ctx;
    let ks = w.pick_ks();
    let handle = &ctx.ks[ks];
    let (run, bounds, prefix) = if w.rng.gen_ratio(1, 4) {
        let p = w.pick_key() / 10 * 10;
        let bounds = (
            Bound::Included(key_name(p)),
            Bound::Excluded(key_name(p + 10)),
        );
        (
            (p, (p + 10).min(w.keys())),
            bounds,
            Some(key_name(p)[..8].to_vec()),
        )
    } else {
        let (a, b) = w.pick_run(32);
        let lower = match w.rng.gen_range(0..3) {
            0 => Bound::Included(key_name(a)),
            1 => Bound::Excluded(key_name(a)),
            _ => Bound::Included([key_name(a), vec![0]].concat()),
        };
        let upper = match w.rng.gen_range(0..4) {
            0 => Bound::Excluded(key_name(b)),
            1 | 2 => Bound::Included(key_name(b - 1)),
            _ => Bound::Excluded(key_name(b - 1)),
        };
        ((a, b), (lower, upper), None)
    };
    let _held = ctx.locks.lock_run(ks, run.0, run.1);
    let (it, what) = match &prefix {
        Some(p) => (handle.prefix_iter(p), "prefix_iter"),
        None => (handle.range::<Vec<u8>, _>(bounds.clone()), "range iterator"),
    };
    walk_and_check(w, ks, run, bounds, it, what);
}

/// Walks `it` one of five ways and checks what it yields.
fn walk_and_check(
    w: &mut Worker,
    ks: usize,
    run: (u32, u32),
    mut bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>),
    mut it: DbIterator,
    what: &str,
) {
    // (A prefix iterator's seeks stay within the run: outside its prefix is not its range.)
    let target = if what == "prefix_iter" || w.rng.gen_bool(0.5) {
        key_name(w.rng.gen_range(run.0..=run.1))
    } else {
        outside_target(w, run)
    };
    let (entries, how) = match w.rng.gen_range(0..6) {
        0 => (it.by_ref().collect::<siftdb::Result<Vec<_>>>(), "forward"),
        1 => (reversed(it.by_ref().rev().collect()), "backward"),
        2 => (from_both_ends(w, &mut it), "from both ends"),
        3 => {
            it.seek(&target);
            bounds.0 = tighter_lower(bounds.0, target);
            (it.by_ref().collect(), "forward after seek")
        }
        _ => {
            it.seek_for_prev(&target);
            bounds.1 = tighter_upper(bounds.1, target);
            (
                reversed(it.by_ref().rev().collect()),
                "backward after seek_for_prev",
            )
        }
    };
    let op = format!("{what} ({how})");
    match entries {
        Ok(entries) => {
            let allowed = |key| w.ctx.exp.allowed(ks, key);
            w.checker().scan(&op, ks, run, &bounds, &entries, &allowed);
        }
        Err(e) => w.checker().error(&op, KEYSPACES[ks], "(scan)", &e),
    }
}

type Entries = siftdb::Result<Vec<(Vec<u8>, Vec<u8>)>>;

fn reversed(entries: Entries) -> Entries {
    entries.map(|mut e| {
        e.reverse();
        e
    })
}

/// A seek target outside the run `a..b`: just above its last key, at or past its end, far
/// past it, or below its first key (a seek_for_prev past an included upper bound must land
/// on the bound; a seek below the lower bound on the first key).
fn outside_target(w: &mut Worker, (a, b): (u32, u32)) -> Vec<u8> {
    match w.rng.gen_range(0..5) {
        0 => [key_name(b.saturating_sub(1)), vec![0]].concat(),
        1 => [key_name(b.saturating_sub(1)), vec![0xff]].concat(),
        2 => key_name(b + w.rng.gen_range(0..100)),
        3 => b"z".to_vec(),
        _ => match a.checked_sub(1) {
            Some(k) => [key_name(k), vec![0xff]].concat(),
            None => b"a".to_vec(),
        },
    }
}

/// Alternates `next` and `next_back` at random until the ends meet.
fn from_both_ends(w: &mut Worker, it: &mut DbIterator) -> Entries {
    let (mut front, mut back) = (Vec::new(), Vec::new());
    loop {
        let item = if w.rng.gen_bool(0.5) {
            it.next().map(|r| r.map(|e| front.push(e)))
        } else {
            it.next_back().map(|r| r.map(|e| back.push(e)))
        };
        match item {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(e),
            None => break,
        }
    }
    back.reverse();
    front.extend(back);
    Ok(front)
}

/// The lower bound of a walk forward after `seek(target)`: the tighter of the two.
fn tighter_lower(lower: Bound<Vec<u8>>, target: Vec<u8>) -> Bound<Vec<u8>> {
    match &lower {
        Bound::Included(b) | Bound::Excluded(b) if *b >= target => lower,
        _ => Bound::Included(target),
    }
}

/// The upper bound of a walk backward after `seek_for_prev(target)`: the tighter of the two.
fn tighter_upper(upper: Bound<Vec<u8>>, target: Vec<u8>) -> Bound<Vec<u8>> {
    match &upper {
        Bound::Included(b) | Bound::Excluded(b) if *b <= target => upper,
        _ => Bound::Included(target),
    }
}

/// A raw cursor bounded to a locked run: 1 to 8 moves (seek, seek_for_prev, seek_to_first,
/// seek_to_last, next, prev), each checked: no present key skipped, the key landed on present
/// with its value.
pub fn seek(w: &mut Worker) {
    let ctx = w.ctx;
    let ks = w.pick_ks();
    let (a, b) = w.pick_run(32);
    let _held = ctx.locks.lock_run(ks, a, b);
    let opts = ReadOptions {
        iterate_lower_bound: Some(key_name(a)),
        iterate_upper_bound: Some(key_name(b)),
        fill_cache: w.rng.gen_bool(0.8),
        // Automatic readahead, or a fixed one of a block or several.
        readahead_size: [0, 0, 4096, 64 << 10][w.rng.gen_range(0..4)],
    };
    let mut it = ctx.ks[ks].raw_iter_opt(&opts);
    for _ in 0..w.rng.gen_range(1..=8) {
        let at = it.valid().then(|| parse_key(it.key())).flatten();
        // (from, forward): where the move looks from, inclusive, and its direction.
        let (from, forward, name) = match (w.rng.gen_range(0..6), at) {
            (0, _) => (a, true, "seek_to_first"),
            (1, _) => (b.saturating_sub(1), false, "seek_to_last"),
            (2, _) => (w.rng.gen_range(a..=b), true, "seek"),
            (3, _) if w.rng.gen_ratio(1, 3) => (b - 1, false, "seek_for_prev past the bound"),
            (3, _) => (w.rng.gen_range(a..b), false, "seek_for_prev"),
            (4, Some(k)) => (k + 1, true, "next"),
            (_, Some(k)) if k > a => (k - 1, false, "prev"),
            (_, Some(_)) => (a, false, "prev past the first"),
            (_, None) => (a, true, "seek_to_first"),
        };
        match name {
            "seek_to_first" => it.seek_to_first(),
            "seek_to_last" => it.seek_to_last(),
            "seek" => it.seek(&key_name(from)),
            "seek_for_prev" => it.seek_for_prev(&key_name(from)),
            "seek_for_prev past the bound" => {
                let target = match w.rng.gen_range(0..3) {
                    0 => key_name(b),
                    1 => [key_name(b - 1), vec![0xff]].concat(),
                    _ => b"z".to_vec(),
                };
                it.seek_for_prev(&target)
            }
            "next" => it.next(),
            _ => it.prev(),
        }
        let off_the_front = name == "prev past the first";
        if !check_cursor(w, ks, (a, b), (from, forward, off_the_front), &it, name) {
            return;
        }
    }
}

/// Checks where a cursor move from `from` (inclusive) in one direction landed; false when the
/// walk must end (an error, or a mismatch reported).
fn check_cursor(
    w: &Worker,
    ks: usize,
    (a, b): (u32, u32),
    (from, forward, nothing): (u32, bool, bool),
    it: &siftdb::RawIterator,
    name: &str,
) -> bool {
    let op = format!("raw iterator {name}");
    if let Err(e) = it.status() {
        w.checker().error(&op, KEYSPACES[ks], "(cursor)", &e);
        return false;
    }
    let exp = w.ctx.exp;
    let landed = if it.valid() {
        Some(it.key().to_vec())
    } else {
        None
    };
    let landed_key = landed.as_deref().map(parse_key);
    if let Some(None) = landed_key {
        let what = format!(
            "stray key \"{}\"",
            landed.unwrap_or_default().escape_ascii()
        );
        w.ctx
            .stats
            .mismatch(&op, KEYSPACES[ks], "(cursor)", "a key of the run", &what);
        return false;
    }
    let landed_key = landed_key.flatten();
    // The keys passed over: from `from` up to (forward) or down to (backward) where it landed.
    let passed: Vec<u32> = match (nothing, forward, landed_key) {
        (true, _, _) => Vec::new(),
        (false, true, Some(k)) => (from..k.max(from)).collect(),
        (false, true, None) => (from..b).collect(),
        (false, false, Some(k)) => (k + 1..=from).collect(),
        (false, false, None) => (a..=from.min(b.saturating_sub(1))).collect(),
    };
    let bad_landing = landed_key.is_some_and(|k| {
        k < a || k >= b || nothing || (forward && k < from) || (!forward && k > from)
    });
    if bad_landing {
        let what = format!(
            "the cursor on {}",
            String::from_utf8_lossy(&key_name(landed_key.unwrap_or(0)))
        );
        w.ctx.stats.mismatch(
            &op,
            KEYSPACES[ks],
            "(cursor)",
            &format!(
                "a key on the {} side of k{from:08}",
                if forward { "upper" } else { "lower" }
            ),
            &what,
        );
        return false;
    }
    for key in passed {
        let allowed = exp.allowed(ks, key);
        if allowed.presence() == Some(true) {
            w.checker().value(&op, ks, key, &allowed, None);
            return false;
        }
    }
    if let Some(k) = landed_key {
        let allowed: Allowed = exp.allowed(ks, k);
        w.checker().value(&op, ks, k, &allowed, Some(it.value()));
    }
    true
}
