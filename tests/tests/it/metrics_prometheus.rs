//! The Prometheus example's endpoint after its workload (cargo feature `metrics`): scraped over
//! TCP, it shows per-level filter figures and data-block figures labelled with both keyspaces,
//! the block cache per kind, and the sampled latency histograms. In a process of its own
//! (`siftdb_tests::own_process`): the example installs the process's global metrics recorder,
//! which every other test's database would publish into.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

#[allow(dead_code)] // its `main` is the example's
#[path = "../../../engine/examples/prometheus.rs"]
mod example;

/// One sample of the exposition: its name, labels (sorted) and value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A free port on the loopback interface (the listener binds it again at once).
fn free_addr() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// `GET /metrics` over a plain TCP connection (HTTP/1.0: the body ends with the connection).
fn scrape(addr: SocketAddr) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut stream = loop {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            Ok(stream) => break stream,
            Err(e) if Instant::now() < deadline => {
                eprintln!("connecting to {addr}: {e}; retrying");
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("no listener on {addr}: {e}"),
        }
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(
        head.starts_with("HTTP/1.") && head.contains(" 200 "),
        "{head}"
    );
    body.to_string()
}

/// The exposition's samples (comments skipped).
fn parse(body: &str) -> Vec<Sample> {
    body.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("a sample line");
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let labels = labels
                .split(',')
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (k, v) = pair.split_once('=').expect("label=value");
                    (k.to_string(), v.trim_matches('"').to_string())
                })
                .collect();
            Sample {
                name: name.to_string(),
                labels,
                value: value.parse().unwrap_or_else(|_| panic!("value of {line}")),
            }
        })
        .collect()
}

/// The value of `name` with exactly `labels`, if the exposition has it.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    samples
        .iter()
        .find(|s| s.name == name && s.labels == want)
        .map(|s| s.value)
}

/// The levels of `keyspace` holding tables, per `siftdb_level_files`.
fn levels_with_tables(samples: &[Sample], keyspace: &str) -> Vec<String> {
    samples
        .iter()
        .filter(|s| s.name == "siftdb_level_files" && s.labels["keyspace"] == keyspace)
        .filter(|s| s.value > 0.0)
        .map(|s| s.labels["level"].clone())
        .collect()
}

#[test]
fn scrape_after_workload_finds_per_level_and_per_keyspace_figures() {
    let name = "scrape_after_workload_finds_per_level_and_per_keyspace_figures";
    siftdb_tests::own_process::run_alone(module_path!(), name, || {
        let dir = tempfile::tempdir().unwrap();
        let addr = free_addr();
        let db = example::serve(addr, dir.path()).unwrap();
        // Flush durations reach the recorder from the events' thread: wait for the last one.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut body = scrape(addr);
        while !body.contains("siftdb_flush_seconds_count{keyspace=\"users\"}")
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(50));
            body = scrape(addr);
        }
        let samples = parse(&body);
        let dump = || {
            body.lines()
                .filter(|l| l.contains("keyspace"))
                .collect::<Vec<_>>()
                .join("\n")
        };

        for keyspace in example::KEYSPACES {
            let levels = levels_with_tables(&samples, keyspace);
            assert!(
                levels.len() >= 2,
                "{keyspace}: tables on L0 and a deeper level: {levels:?}\n{}",
                dump()
            );
            assert!(
                levels.iter().any(|l| l == "0"),
                "{keyspace}: an L0 table: {levels:?}"
            );
            for level in &levels {
                let labels = [("keyspace", keyspace), ("level", level.as_str())];
                let get = |name| {
                    value(&samples, name, &labels)
                        .unwrap_or_else(|| panic!("{name}{labels:?} missing\n{}", dump()))
                };
                // Every missing key lies inside every table's range: each level's filters were
                // asked about it, and said "no" to nearly all of it.
                let checked = get("siftdb_filter_checked_total");
                let useful = get("siftdb_filter_useful_total");
                assert!(
                    checked >= f64::from(example::KEYS),
                    "{keyspace} L{level}: {checked} probes"
                );
                assert!(
                    useful > 0.0 && useful <= checked,
                    "{keyspace} L{level}: useful {useful} of {checked}"
                );
                assert!(
                    useful
                        + get("siftdb_filter_false_positives_total")
                        + get("siftdb_filter_true_positive_total")
                        == checked,
                    "{keyspace} L{level}: useful + false + true positives = probes"
                );
                assert!(get("siftdb_level_bytes") > 0.0 && get("siftdb_level_keys") > 0.0);
                assert!(
                    get("siftdb_data_block_accesses_total") > 0.0,
                    "{keyspace} L{level}: data blocks used"
                );
            }
            let mem = value(
                &samples,
                "siftdb_memtable_entries",
                &[("keyspace", keyspace)],
            );
            assert_eq!(mem, Some(0.0), "{keyspace}: everything flushed");
            assert!(value(
                &samples,
                "siftdb_filter_index_checked_total",
                &[("keyspace", keyspace)]
            )
            .is_some());
            let gets = samples
                .iter()
                .find(|s| {
                    s.name == "siftdb_get_seconds_count"
                        && s.labels.get("keyspace").map(String::as_str) == Some(keyspace)
                })
                .map(|s| s.value);
            assert!(
                gets.is_some_and(|n| n > 0.0),
                "{keyspace}: sampled get latencies: {gets:?}"
            );
            let seeks = samples
                .iter()
                .find(|s| {
                    s.name == "siftdb_seek_seconds_count"
                        && s.labels.get("keyspace").map(String::as_str) == Some(keyspace)
                })
                .map(|s| s.value);
            assert!(
                seeks.is_some_and(|n| n > 0.0),
                "{keyspace}: sampled seek latencies: {seeks:?}"
            );
            // Flush durations come from the flush events, delivered on the events' thread.
            let flushes = samples
                .iter()
                .find(|s| {
                    s.name == "siftdb_flush_seconds_count"
                        && s.labels.get("keyspace").map(String::as_str) == Some(keyspace)
                })
                .map(|s| s.value);
            assert!(
                flushes.is_some_and(|n| n > 0.0),
                "{keyspace}: flush durations: {flushes:?}"
            );
        }

        // The block cache is shared by the keyspaces: its figures are per block kind.
        let hits = value(
            &samples,
            "siftdb_block_cache_hits_total",
            &[("kind", "data")],
        );
        let misses = value(
            &samples,
            "siftdb_block_cache_misses_total",
            &[("kind", "data")],
        );
        assert!(
            hits.is_some_and(|n| n > 0.0) && misses.is_some_and(|n| n > 0.0),
            "data block cache: {hits:?} hits, {misses:?} misses"
        );
        assert!(value(
            &samples,
            "siftdb_block_cache_hits_total",
            &[("kind", "filter")]
        )
        .is_some());
        let stats = db.stats();
        assert_eq!(
            value(&samples, "siftdb_gets_total", &[]),
            Some(stats.gets as f64)
        );
        assert_eq!(
            value(&samples, "siftdb_flushes_total", &[]),
            Some(stats.flushes as f64)
        );
        assert!(stats.compactions > 0);
        assert_eq!(
            value(&samples, "siftdb_compactions_total", &[]),
            Some(stats.compactions as f64)
        );
        assert_eq!(value(&samples, "siftdb_background_error", &[]), Some(0.0));
        assert!(
            samples
                .iter()
                .any(|s| s.name == "siftdb_put_seconds_bucket" && s.value > 0.0),
            "sampled put latencies"
        );
        assert!(samples
            .iter()
            .any(|s| s.name == "siftdb_stall_micros_by_cause_total"
                && s.labels["cause"] == "l0_files"));
        db.close().unwrap();
    });
}
