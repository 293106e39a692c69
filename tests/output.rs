//! Tests of the output module: every file a run writes is read back and checked.

mod common;

use peridot::output::{
    image, peak_rss_bytes, write_damage_png, NodeFields, PhaseSeconds, ProbeValues, ProbeWriter,
    Progress, RunStatus, Summary, VtkSeries,
};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

// ---------------------------------------------------------------------------------------------
// A reader for our own .vtu encoding (raw appended data, UInt64 headers, little-endian).
// ---------------------------------------------------------------------------------------------

/// One `<DataArray>` of a .vtu, decoded.
#[derive(Debug)]
struct DecodedArray {
    vtk_type: String,
    components: usize,
    bytes: Vec<u8>,
}

impl DecodedArray {
    fn f64s(&self) -> Vec<f64> {
        assert_eq!(self.vtk_type, "Float64");
        let chunks = self.bytes.chunks_exact(8);
        chunks
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    fn i64s(&self) -> Vec<i64> {
        assert_eq!(self.vtk_type, "Int64");
        let chunks = self.bytes.chunks_exact(8);
        chunks
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
}

/// A parsed .vtu: the XML header text, the `TimeValue`, and every appended array by name.
struct Vtu {
    header: String,
    time: f64,
    arrays: BTreeMap<String, DecodedArray>,
}

/// The value of attribute `name` in the XML tag `tag`.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let len = tag[start..].find('"')?;
    Some(&tag[start..start + len])
}

/// Check that the start and end tags of an XML fragment balance (self-closing tags and the
/// `<?xml ...?>` declaration aside).
fn assert_tags_balance(xml: &str) {
    let mut stack: Vec<String> = Vec::new();
    for piece in xml.split('<').skip(1) {
        let tag = &piece[..piece.find('>').expect("unterminated tag")];
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_alphanumeric())
            .collect();
        if tag.starts_with('?') || tag.ends_with('/') {
            continue;
        } else if tag.starts_with('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.as_str()),
                "unbalanced </{name}>"
            );
        } else {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "unclosed tags: {stack:?}");
}

fn read_vtu(path: &Path) -> Vtu {
    let bytes = std::fs::read(path).unwrap();
    let marker = b"<AppendedData encoding=\"raw\">";
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .unwrap();
    let underscore = at + bytes[at..].iter().position(|&b| b == b'_').unwrap();
    let header = String::from_utf8(bytes[..underscore].to_vec()).unwrap();
    assert!(header.contains("byte_order=\"LittleEndian\""));
    assert!(header.contains("header_type=\"UInt64\""));
    let data = &bytes[underscore + 1..];
    let mut arrays = BTreeMap::new();
    let mut end_of_data = 0;
    for piece in header.split("<DataArray").skip(1) {
        let tag = &piece[..piece.find('>').unwrap()];
        if attribute(tag, "format") != Some("appended") {
            continue;
        }
        let name = attribute(tag, "Name").unwrap().to_string();
        let offset: usize = attribute(tag, "offset").unwrap().parse().unwrap();
        let len = u64::from_le_bytes(data[offset..offset + 8].try_into().unwrap()) as usize;
        end_of_data = end_of_data.max(offset + 8 + len);
        let array = DecodedArray {
            vtk_type: attribute(tag, "type").unwrap().to_string(),
            components: attribute(tag, "NumberOfComponents")
                .unwrap()
                .parse()
                .unwrap(),
            bytes: data[offset + 8..offset + 8 + len].to_vec(),
        };
        arrays.insert(name, array);
    }
    let tail = std::str::from_utf8(&data[end_of_data..]).unwrap();
    assert_eq!(tail.trim_start(), "</AppendedData>\n</VTKFile>\n");
    assert_tags_balance(&format!("{header}{tail}"));
    let time_tag = header.split("Name=\"TimeValue\"").nth(1).unwrap();
    let time_text = &time_tag[time_tag.find('>').unwrap() + 1..time_tag.find('<').unwrap()];
    let time = time_text.parse().unwrap();
    Vtu {
        header,
        time,
        arrays,
    }
}

/// Compare two f64 slices bit for bit (so -0.0, NaN payloads and subnormals count).
fn assert_bitwise(name: &str, got: &[f64], expected: &[f64]) {
    assert_eq!(got.len(), expected.len(), "{name}: length");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert_eq!(g.to_bits(), e.to_bits(), "{name}[{i}]: {g} != {e}");
    }
}

/// `dim`-component vectors widened to 3 components with zeros, as the .vtu stores them.
fn padded(values: &[f64], dim: usize) -> Vec<f64> {
    let pad = |v: &[f64]| {
        (0..3)
            .map(|k| v.get(k).copied().unwrap_or(0.0))
            .collect::<Vec<_>>()
    };
    values.chunks(dim).flat_map(pad).collect()
}

/// Awkward values: signed zero, subnormal, huge, tiny, irrational, NaN.
const ODD: [f64; 8] = [
    -0.0,
    5e-324,
    1.0e300,
    -2.5e-17,
    std::f64::consts::PI,
    f64::NAN,
    1.0,
    -7.0,
];

fn odd(n: usize, salt: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ODD[(i + salt) % ODD.len()] * (1 + i) as f64)
        .collect()
}

// Round trip of a 2D LPS snapshot: every array the .vtu holds must decode to exactly the
// values given (bitwise, including -0.0, subnormals and NaN), vectors widened to 3 components
// with z = 0 so ParaView's "Warp By Vector" works, one VTK_VERTEX cell per node, and the XML
// must be well formed with the time stored as TimeValue.
#[test]
fn vtu_2d_round_trips_every_value_bitwise() {
    let dir = tempfile::tempdir().unwrap();
    let n = 7;
    let positions: Vec<[f64; 3]> = (0..n).map(|i| [i as f64 * 1e-3, -0.5e-3, 0.0]).collect();
    let (volumes, displacement, velocity) = (odd(n, 1), odd(2 * n, 2), odd(2 * n, 3));
    let (damage, dilatation) = (odd(n, 4), odd(n, 5));
    let by_count = odd(n, 6);
    let fields = NodeFields {
        dim: 2,
        positions: &positions,
        volumes: &volumes,
        displacement: &displacement,
        velocity: &velocity,
        damage: &damage,
        damage_bond_count: Some(&by_count),
        dilatation: Some(&dilatation),
        ..Default::default()
    };
    let mut series = VtkSeries::new(dir.path(), "plate").unwrap();
    let path = series.write(42, 1.25e-6, &fields).unwrap();
    assert_eq!(path, dir.path().join("plate_000042.vtu"));

    let vtu = read_vtu(&path);
    assert!(vtu
        .header
        .contains(&format!("NumberOfPoints=\"{n}\" NumberOfCells=\"{n}\"")));
    assert_eq!(vtu.time, 1.25e-6);
    let a = &vtu.arrays;
    assert_eq!(a.len(), 10, "arrays: {:?}", a.keys());
    let flat: Vec<f64> = positions.iter().flatten().copied().collect();
    assert_bitwise("Points", &a["Points"].f64s(), &flat);
    assert_bitwise(
        "displacement",
        &a["displacement"].f64s(),
        &padded(&displacement, 2),
    );
    assert_bitwise("velocity", &a["velocity"].f64s(), &padded(&velocity, 2));
    assert_bitwise("damage", &a["damage"].f64s(), &damage);
    assert_bitwise(
        "damage_bond_count",
        &a["damage_bond_count"].f64s(),
        &by_count,
    );
    assert_bitwise("volume", &a["volume"].f64s(), &volumes);
    assert_bitwise("dilatation", &a["dilatation"].f64s(), &dilatation);
    for name in ["Points", "displacement", "velocity"] {
        assert_eq!(a[name].components, 3, "{name}");
    }
    assert_eq!(a["connectivity"].i64s(), (0..n as i64).collect::<Vec<_>>());
    assert_eq!(a["offsets"].i64s(), (1..=n as i64).collect::<Vec<_>>());
    assert_eq!(a["types"].vtk_type, "UInt8");
    assert_eq!(a["types"].bytes, vec![1u8; n], "VTK_VERTEX is 1");
}

// A 3D PMB snapshot has no dilatation array, and its 3-component vectors are stored as given.
#[test]
fn vtu_3d_without_dilatation() {
    let dir = tempfile::tempdir().unwrap();
    let n = 4;
    let positions: Vec<[f64; 3]> = (0..n).map(|i| [0.0, 1.0, i as f64]).collect();
    let (volumes, damage) = (odd(n, 0), odd(n, 1));
    let (displacement, velocity) = (odd(3 * n, 2), odd(3 * n, 6));
    let fields = NodeFields {
        dim: 3,
        positions: &positions,
        volumes: &volumes,
        displacement: &displacement,
        velocity: &velocity,
        damage: &damage,
        damage_bond_count: None,
        dilatation: None,
        ..Default::default()
    };
    let mut series = VtkSeries::new(&dir.path().join("new/sub"), "block").unwrap();
    let vtu = read_vtu(&series.write(0, 0.0, &fields).unwrap());
    assert!(!vtu.arrays.contains_key("dilatation"));
    assert_eq!(vtu.arrays.len(), 8);
    assert_bitwise(
        "displacement",
        &vtu.arrays["displacement"].f64s(),
        &displacement,
    );
    assert_bitwise("velocity", &vtu.arrays["velocity"].f64s(), &velocity);
}

// Arrays whose lengths do not match the node count are a reported error naming the array,
// not a panic or a corrupt file.
#[test]
fn vtu_rejects_mismatched_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let positions = [[0.0; 3]; 3];
    let short = [0.0; 5];
    let fields = NodeFields {
        dim: 2,
        positions: &positions,
        volumes: &[1.0; 3],
        displacement: &short,
        velocity: &[0.0; 6],
        damage: &[0.0; 3],
        damage_bond_count: None,
        dilatation: None,
        ..Default::default()
    };
    let mut series = VtkSeries::new(dir.path(), "bad").unwrap();
    let message = series.write(0, 0.0, &fields).unwrap_err().to_string();
    assert!(message.contains("displacement has 5 values"), "{message}");
    assert!(VtkSeries::new(dir.path(), "a/b").is_err());
}

/// The `(timestep, file)` pairs of a .pvd.
fn pvd_entries(path: &Path) -> Vec<(f64, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    assert_tags_balance(&text);
    assert!(text.contains("<VTKFile type=\"Collection\""));
    let tags = text.split("<DataSet").skip(1);
    tags.map(|tag| {
        let time = attribute(tag, "timestep").unwrap().parse().unwrap();
        (time, attribute(tag, "file").unwrap().to_string())
    })
    .collect()
}

// The .pvd must list every snapshot written so far, in step order, by relative file name,
// after every write (so a run that stops early leaves a valid series); writing a step again
// replaces its entry instead of duplicating it.
#[test]
fn pvd_lists_every_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let positions = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]];
    let zeros = [0.0; 4];
    let fields = NodeFields {
        dim: 2,
        positions: &positions,
        volumes: &[1.0, 1.0],
        displacement: &zeros,
        velocity: &zeros,
        damage: &[0.0, 0.5],
        damage_bond_count: None,
        dilatation: None,
        ..Default::default()
    };
    let mut series = VtkSeries::new(dir.path(), "run").unwrap();
    let pvd = series.pvd_path();
    assert_eq!(pvd, dir.path().join("run.pvd"));
    let mut expected = Vec::new();
    for (k, step) in [0usize, 100, 200, 1000000].into_iter().enumerate() {
        let time = k as f64 * 1e-7;
        series.write(step, time, &fields).unwrap();
        expected.push((time, format!("run_{step:06}.vtu")));
        assert_eq!(pvd_entries(&pvd), expected);
    }
    series.write(100, 5e-8, &fields).unwrap();
    expected[1].0 = 5e-8;
    assert_eq!(pvd_entries(&pvd), expected);
    for (_, file) in &expected {
        assert!(dir.path().join(file).is_file(), "{file}");
    }
    assert!(!dir.path().join("run.pvd.tmp").exists());
}

// ---------------------------------------------------------------------------------------------
// Probes, summary, PNG, memory, progress.
// ---------------------------------------------------------------------------------------------

// The probe CSV has the documented header (components up to dim, per region, displacement
// then force) and one row per call whose numbers parse back exactly; rows are on disk as
// soon as write_row returns.
#[test]
fn probes_csv_header_and_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("probes.csv");
    let names = vec!["top".to_string(), "grip".to_string()];
    let mut probes = ProbeWriter::create(&path, &names, 2).unwrap();
    let top = ProbeValues {
        mean_displacement: [1.5e-6, -0.0, 9.0],
        force: [0.0, 123.25, 9.0],
    };
    let grip = ProbeValues {
        mean_displacement: [std::f64::consts::E, 2.0, 9.0],
        force: [-1e-30, 4.0, 9.0],
    };
    probes.write_row(0, 0.0, &[top, grip]).unwrap();
    probes.write_row(10, 2.5e-7, &[grip, top]).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "step,time,top_ux,top_uy,top_fx,top_fy,grip_ux,grip_uy,grip_fx,grip_fy"
    );
    assert_eq!(lines.len(), 3);
    let row: Vec<f64> = lines[2].split(',').map(|v| v.parse().unwrap()).collect();
    let expected = [
        10.0,
        2.5e-7,
        std::f64::consts::E,
        2.0,
        -1e-30,
        4.0,
        1.5e-6,
        -0.0,
        0.0,
        123.25,
    ];
    assert_bitwise("row", &row, &expected);
    assert!(
        probes.write_row(11, 0.0, &[top]).is_err(),
        "one value for two regions"
    );

    let path3 = dir.path().join("probes3.csv");
    ProbeWriter::create(&path3, &["a,b".to_string()], 3).unwrap();
    let header = std::fs::read_to_string(&path3).unwrap();
    assert_eq!(
        header,
        "step,time,\"a,b_ux\",\"a,b_uy\",\"a,b_uz\",\"a,b_fx\",\"a,b_fy\",\"a,b_fz\"\n"
    );
}

fn sample_summary() -> Summary {
    Summary {
        model: "plate".into(),
        nodes: 1000,
        bonds: 28000,
        steps: 500,
        backend: "cpu-loop".into(),
        precision: "f64".into(),
        dt: 1e-8,
        wall_seconds: 2.5,
        phase_seconds: PhaseSeconds {
            neighbors: Some(0.1),
            forces: Some(2.0),
            ..Default::default()
        },
        node_steps_per_second: 250_000.0,
        peak_rss_bytes: peak_rss_bytes(),
        broken_bonds: 12,
        max_damage: 0.25,
        ..Default::default()
    }
}

// summary.json carries every key the contract fixes, leaves out the optional ones when they
// are None (instead of writing null), lists only the phases that applied, and reads back
// equal.
#[test]
fn summary_json_has_contract_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("summary.json");
    let summary = sample_summary();
    summary.write(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let object = json.as_object().unwrap();
    for key in common::SUMMARY_KEYS {
        assert!(object.contains_key(key), "missing {key}");
    }
    for key in [
        "peak_gpu_bytes",
        "static_residual",
        "converged",
        "stopped_early",
        "stopped_at_step",
    ] {
        assert!(
            !object.contains_key(key),
            "{key} should be omitted when None"
        );
    }
    let phases = object["phase_seconds"].as_object().unwrap();
    let phase_keys: Vec<&str> = phases.keys().map(String::as_str).collect();
    assert_eq!(phase_keys.len(), 2, "{phase_keys:?}");
    assert_eq!(phases["forces"], 2.0);
    assert_eq!(json["nodes"], 1000);
    assert_eq!(json["backend"], "cpu-loop");
    assert!(text.contains("\n  \"model\": \"plate\""), "pretty-printed");
    assert_eq!(Summary::read(&path).unwrap(), summary);

    let with_options = Summary {
        peak_gpu_bytes: Some(1 << 30),
        static_residual: Some(1e-9),
        ..summary
    };
    with_options.write(&path).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(json["peak_gpu_bytes"], 1u64 << 30);
    assert_eq!(json["static_residual"], 1e-9);
    assert_eq!(json["status"], "completed");

    // each status by its lower-case name; the step where one is recorded
    for (status, name) in [
        (RunStatus::Interrupted, "interrupted"),
        (RunStatus::Failed, "failed"),
        (RunStatus::Unstable, "unstable"),
    ] {
        let stopped = Summary {
            status,
            stopped_at_step: Some(7),
            ..with_options.clone()
        };
        stopped.write(&path).unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(json["status"], name);
        assert_eq!(status.name(), name);
        assert_eq!(json["stopped_at_step"], 7);
        assert_eq!(Summary::read(&path).unwrap(), stopped);
    }
}

// The peak resident set size comes from /proc/self/status on Linux and must be a plausible
// positive number of bytes (a test binary needs at least a megabyte).
#[cfg(target_os = "linux")]
#[test]
fn peak_rss_is_positive_on_linux() {
    let rss = peak_rss_bytes();
    assert!(rss > 1 << 20, "peak RSS {rss} bytes");
}

/// Decode a PNG into (width, height, RGB8 pixels).
fn decode_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut reader = png::Decoder::new(file).read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    pixels.truncate(info.buffer_size());
    (info.width, info.height, pixels)
}

fn pixel(pixels: &[u8], width: u32, x: u32, y: u32) -> [u8; 3] {
    let i = (y as usize * width as usize + x as usize) * 3;
    [pixels[i], pixels[i + 1], pixels[i + 2]]
}

// A 10 x 5 lattice (dx = 1 mm) is drawn 800 px wide (80 px per node), y up, with the
// documented layout: a damaged node shows the colour map's 1, intact ones its 0, the corners
// of the margin stay white, and the colour bar runs from 1 at the top to 0 at the bottom.
#[test]
fn png_shows_damaged_and_intact_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damage.png");
    let dx = 1e-3;
    let positions: Vec<[f64; 3]> = (0..50)
        .map(|i| [(i % 10) as f64 * dx + 0.3, (i / 10) as f64 * dx - 2.0, 0.0])
        .collect();
    let mut damage = vec![0.0; 50];
    damage[49] = 1.0; // top-right node
    write_damage_png(&path, &positions, 2, dx, &damage).unwrap();
    let (width, height, pixels) = decode_png(&path);
    let m = image::MARGIN_PX;
    let extra = image::GAP_PX + image::BAR_WIDTH_PX + image::TICK_PX + image::LEGEND_PX;
    assert_eq!((width, height), (m + 800 + extra + m, m + 400 + m));
    let at = |x, y| pixel(&pixels, width, x, y);
    let node_centre = |col: u32, row: u32| (m + col * 80 + 40, m + (4 - row) * 80 + 40);
    let (x, y) = node_centre(9, 4);
    assert_eq!(at(x, y), image::colormap(1.0), "damaged node");
    let (x, y) = node_centre(0, 0);
    assert_eq!(at(x, y), image::colormap(0.0), "intact node");
    assert_eq!(at(0, 0), [255, 255, 255]);
    let bar_x = m + 800 + image::GAP_PX + image::BAR_WIDTH_PX / 2;
    assert_eq!(at(bar_x, m + 1), image::colormap(1.0), "bar top");
    assert_eq!(
        at(bar_x, height - m - 2),
        image::colormap(0.0),
        "bar bottom"
    );
}

// The colour bar is read by its ticks and labels: black tick marks at the rows of 1 (top),
// 0.5 and 0 (bottom) right of the bar; black text (the labels) centred on each tick row in the
// label column, and the title "damage" written upwards right of it, across the bar's middle;
// nothing dark elsewhere in the legend (above the top label, say).
#[test]
fn png_colour_bar_has_ticks_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damage.png");
    let positions: Vec<[f64; 3]> = (0..50)
        .map(|i| [(i % 10) as f64, (i / 10) as f64, 0.0])
        .collect();
    write_damage_png(&path, &positions, 2, 1.0, &vec![0.5; 50]).unwrap();
    let (width, height, pixels) = decode_png(&path);
    let m = image::MARGIN_PX;
    let dark = |x: u32, y: u32| pixel(&pixels, width, x, y).iter().all(|&c| c < 64);
    let bar_x = m + 800 + image::GAP_PX;
    let tick_x = bar_x + image::BAR_WIDTH_PX;
    let (top, bottom) = (m, height - m - 1);
    let middle = top + (bottom - top) / 2;
    for (name, row) in [("1", top), ("0.5", middle), ("0", bottom)] {
        assert!(
            (tick_x..tick_x + image::TICK_PX).all(|x| dark(x, row)),
            "tick at {name} (row {row})"
        );
        let labels_x = tick_x + image::TICK_PX + image::LABEL_GAP_PX;
        let half = 4 * image::FONT_SCALE;
        let ink = (labels_x..labels_x + image::TICK_LABEL_PX)
            .flat_map(|x| (row.saturating_sub(half)..row + half).map(move |y| (x, y)))
            .filter(|&(x, y)| dark(x, y))
            .count();
        assert!(ink >= 10, "label {name} near row {row}: {ink} dark pixels");
    }
    let title_x = tick_x + image::TICK_PX + 2 * image::LABEL_GAP_PX + image::TICK_LABEL_PX;
    let title_ink = (title_x..width - m)
        .flat_map(|x| (middle - 30..middle + 30).map(move |y| (x, y)))
        .filter(|&(x, y)| dark(x, y))
        .count();
    assert!(title_ink >= 40, "title: {title_ink} dark pixels");
    let legend = tick_x + image::TICK_PX..width;
    assert!(legend.clone().all(|x| !dark(x, 0) && !dark(x, height - 1)));
}

// In 3D only the lattice layer nearest the mid-plane is drawn: damage in the outer layers
// must not show, damage in the middle layer must.
#[test]
fn png_3d_draws_the_mid_plane() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slice.png");
    let mut positions = Vec::new();
    let mut damage = Vec::new();
    for k in 0..3 {
        for j in 0..4 {
            for i in 0..4 {
                positions.push([i as f64, j as f64, k as f64]);
                let d = match (i, j, k) {
                    (0, 0, 1) => 1.0,
                    (_, _, 1) => 0.0,
                    _ => 0.5,
                };
                damage.push(d);
            }
        }
    }
    write_damage_png(&path, &positions, 3, 1.0, &damage).unwrap();
    let (width, _, pixels) = decode_png(&path);
    let m = image::MARGIN_PX;
    // 4 cells, 200 px each; (0, 0) is the bottom-left cell.
    assert_eq!(
        pixel(&pixels, width, m + 100, m + 700),
        image::colormap(1.0)
    );
    assert_eq!(
        pixel(&pixels, width, m + 700, m + 100),
        image::colormap(0.0)
    );
}

// Bad input is an error that names the problem: an empty body, or lengths that differ.
#[test]
fn png_rejects_empty_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.png");
    let message = write_damage_png(&path, &[], 2, 1.0, &[])
        .unwrap_err()
        .to_string();
    assert!(message.contains("empty"), "{message}");
    let message = write_damage_png(&path, &[[0.0; 3]], 2, 1.0, &[])
        .unwrap_err()
        .to_string();
    assert!(message.contains("damage has 0 values"), "{message}");
    assert!(write_damage_png(&path, &[[0.0; 3]], 2, 0.0, &[0.0]).is_err());
}

// A body far longer than 2000 cells is coarsened rather than drawn as a huge image.
#[test]
fn png_stays_under_2000_px() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.png");
    let positions: Vec<[f64; 3]> = (0..10_000).map(|i| [i as f64, 0.0, 0.0]).collect();
    write_damage_png(&path, &positions, 2, 1.0, &vec![0.0; 10_000]).unwrap();
    let (width, height, _) = decode_png(&path);
    assert!(width <= 2000 && height <= 2000, "{width} x {height}");
}

/// A `Write` that appends to a shared buffer, to read what Progress printed.
#[derive(Clone, Default)]
struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// Without a terminal, progress is plain lines about every 10% in the documented format,
// with the message appended, and a finished run is reported once; it must not panic for
// zero steps or positions beyond the total.
#[test]
fn progress_plain_lines() {
    let buffer = SharedBuffer::default();
    let mut progress = Progress::plain(1000, "run", Box::new(buffer.clone()));
    for step in 1..=1000 {
        progress.set(step);
        if step == 500 {
            progress.set_message("max damage 0.12");
        }
    }
    progress.finish();
    progress.finish();
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 10, "{text}");
    assert!(
        lines[0].starts_with("run: step 100/1000 (10%), "),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(" steps/s"), "{}", lines[0]);
    assert!(lines[0].contains(", eta "), "{}", lines[0]);
    assert!(lines[5].ends_with("; max damage 0.12"), "{}", lines[5]);
    assert!(
        lines[9].starts_with("run: step 1000/1000 (100%)"),
        "{}",
        lines[9]
    );

    let mut empty = Progress::plain(0, "none", Box::new(SharedBuffer::default()));
    empty.set(5);
    empty.finish();
    let mut real = Progress::new(2, "stderr");
    for step in 0..=3 {
        real.set(step);
    }
    real.finish();
    let mut quiet = Progress::hidden(10);
    quiet.set(3);
    quiet.finish();
}

// Timing: a million-node 3D LPS snapshot should write in about a second on a local disk.
// Run with `cargo test --release --test output -- --ignored --nocapture`.
#[test]
#[ignore]
fn vtu_one_million_nodes_timing() {
    let dir = tempfile::tempdir().unwrap();
    let n = 1_000_000;
    let positions: Vec<[f64; 3]> = (0..n).map(|i| [i as f64, 0.5, 0.25]).collect();
    let scalar: Vec<f64> = (0..n).map(|i| i as f64 * 1e-3).collect();
    let vector: Vec<f64> = (0..3 * n).map(|i| i as f64 * 1e-6).collect();
    let fields = NodeFields {
        dim: 3,
        positions: &positions,
        volumes: &scalar,
        displacement: &vector,
        velocity: &vector,
        damage: &scalar,
        damage_bond_count: None,
        dilatation: Some(&scalar),
        ..Default::default()
    };
    let mut series = VtkSeries::new(dir.path(), "big").unwrap();
    let start = std::time::Instant::now();
    let path = series.write(0, 0.0, &fields).unwrap();
    let seconds = start.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&path).unwrap().len();
    println!("1M nodes: {bytes} bytes in {seconds:.3} s");
    assert!(seconds < 5.0);
}
