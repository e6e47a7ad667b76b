//! A decoder's tied token embedding, applied outside the graph.
//!
//! Whisper's decoder reads one `[width, vocabulary]` matrix twice: its rows are looked up for the
//! input tokens (a `Gather`) and the same matrix projects the last hidden state onto the
//! vocabulary (the final `MatMul`). Inside tract that matrix costs 160 MB for tiny.en: the
//! file's float16 widened to float32 for the lookup, plus a second, packed copy for the product.
//! [`split_tied_embedding`] cuts both uses out of the graph when it is loaded, so the graph takes
//! token embeddings and returns hidden states, and [`TiedEmbedding`] keeps the matrix once, in the
//! file's float16 (40 MB): [`TiedEmbedding::lookup`] widens the few rows a call needs, and
//! [`TiedEmbedding::project`] widens blocks of rows into a small scratch matrix and multiplies
//! them with the hidden states (ndarray's matrix product, blocks spread over the rayon pool).
//! float16 to float32 is exact, so the result is the graph's own product up to the order of the
//! sums.

use half::f16;
use half::slice::HalfFloatSliceExt;
use ndarray::ArrayView2;
use rayon::prelude::*;
use tract_onnx::pb::{tensor_shape_proto, type_proto, ModelProto};

/// Vocabulary rows widened and multiplied at a time (1.5 MB of float32 at width 384).
const BLOCK_ROWS: usize = 1024;

/// The name of the graph input that replaces the token ids after [`split_tied_embedding`].
pub const EMBEDDINGS_INPUT: &str = "token_embeddings";

/// A `[vocabulary][width]` token embedding kept as float16 rows.
#[derive(Clone)]
pub struct TiedEmbedding {
    vocabulary: usize,
    width: usize,
    rows: Vec<f16>,
}

impl std::fmt::Debug for TiedEmbedding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiedEmbedding")
            .field("vocabulary", &self.vocabulary)
            .field("width", &self.width)
            .finish_non_exhaustive()
    }
}

impl TiedEmbedding {
    /// A table of `vocabulary` rows of `width` values, row-major (`rows.len()` must be their
    /// product).
    pub fn new(vocabulary: usize, width: usize, rows: Vec<f16>) -> Option<TiedEmbedding> {
        (vocabulary.checked_mul(width) == Some(rows.len()) && width > 0).then_some(TiedEmbedding {
            vocabulary,
            width,
            rows,
        })
    }

    /// Number of rows (tokens).
    pub fn vocabulary(&self) -> usize {
        self.vocabulary
    }

    /// Values per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The rows of `ids`, widened: `[ids.len()][width]`; `None` when an id is out of range.
    pub fn lookup(&self, ids: &[u32]) -> Option<Vec<f32>> {
        let mut out = vec![0f32; ids.len() * self.width];
        for (&id, target) in ids.iter().zip(out.chunks_exact_mut(self.width)) {
            let start = (id as usize).checked_mul(self.width)?;
            let row = self.rows.get(start..start + self.width)?;
            row.convert_to_f32_slice(target);
        }
        Some(out)
    }

    /// `hidden` (`[n][width]`, row-major) times the table's transpose: `[n][vocabulary]` scores,
    /// what the graph's output projection computed. `None` when `hidden.len()` is not a multiple of
    /// the width.
    pub fn project(&self, hidden: &[f32]) -> Option<Vec<f32>> {
        if !hidden.len().is_multiple_of(self.width) {
            return None;
        }
        let n = hidden.len() / self.width;
        if n == 0 {
            return Some(Vec::new());
        }
        let states = ArrayView2::from_shape((n, self.width), hidden).ok()?;
        let blocks: Vec<Vec<f32>> = self
            .rows
            .par_chunks(BLOCK_ROWS * self.width)
            .map(|block| {
                let mut wide = vec![0f32; block.len()];
                block.convert_to_f32_slice(&mut wide);
                let rows = block.len() / self.width;
                // Shapes agree by construction: `wide` holds `rows` whole rows.
                let table =
                    ArrayView2::from_shape((rows, self.width), &wide[..]).expect("whole rows");
                states.dot(&table.t()).into_iter().collect()
            })
            .collect();
        let mut out = vec![0f32; n * self.vocabulary];
        let mut column = 0;
        for block in &blocks {
            let rows = block.len() / n;
            for (i, scores) in block.chunks_exact(rows).enumerate() {
                let start = i * self.vocabulary + column;
                out[start..start + rows].copy_from_slice(scores);
            }
            column += rows;
        }
        Some(out)
    }
}

/// `values` (`[height][width]`, row-major) transposed to `[width][height]`, in square tiles so
/// that both sides stay in cache (a column at a time wrote a cache line per value: 0.15 s for
/// tiny.en's 20 million values, against 0.02 s).
fn transpose(values: &[f16], height: usize, width: usize) -> Vec<f16> {
    const TILE: usize = 64;
    let mut out = vec![f16::ZERO; values.len()];
    for row0 in (0..height).step_by(TILE) {
        let rows = row0..(row0 + TILE).min(height);
        for column0 in (0..width).step_by(TILE) {
            let columns = column0..(column0 + TILE).min(width);
            for row in rows.clone() {
                let source = &values[row * width..][columns.clone()];
                for (column, &value) in columns.clone().zip(source) {
                    out[column * height + row] = value;
                }
            }
        }
    }
    out
}

/// Cuts a tied embedding out of a decoder graph: the `[width, vocabulary]` initialiser `table`
/// read (directly or through a `Cast` to float) by exactly one `Gather` of the token-id input
/// `ids_input` along axis 1, whose result is transposed to `[1, tokens, width]` by a `Transpose`
/// with `perm = [1, 2, 0]`, and by exactly one `MatMul` as its right operand (the output
/// projection). Afterwards the graph's input `ids_input` is a float input named
/// [`EMBEDDINGS_INPUT`] of shape `[1, tokens, width]` (shape-only readers of the ids read it
/// instead), the projection is an `Identity` of its left operand (the graph returns hidden
/// states), and the initialiser is gone: its values are returned. Any other use of the table or
/// of the ids is an error, so a graph of a different shape is refused instead of being
/// miscomputed.
pub fn split_tied_embedding(
    proto: &mut ModelProto,
    table: &str,
    ids_input: &str,
) -> Result<TiedEmbedding, String> {
    const FLOAT: i32 = 1;
    const FLOAT16: i32 = 10;
    let graph = proto.graph.as_mut().ok_or("the model has no graph")?;
    let index = graph
        .initializer
        .iter()
        .position(|t| t.name == table)
        .ok_or_else(|| format!("no initialiser {table}"))?;
    let source = &graph.initializer[index];
    if source.dims.len() != 2 || source.dims.iter().any(|&d| d <= 0) {
        return Err(format!("{table} is not a 2-D matrix: {:?}", source.dims));
    }
    let (width, vocabulary) = (source.dims[0] as usize, source.dims[1] as usize);
    let values: Vec<f16> = match source.data_type {
        FLOAT16 if !source.raw_data.is_empty() => source
            .raw_data
            .chunks_exact(2)
            .map(|c| f16::from_bits(u16::from_le_bytes([c[0], c[1]])))
            .collect(),
        FLOAT16 => source
            .int32_data
            .iter()
            .map(|&v| f16::from_bits(v as u16))
            .collect(),
        other => return Err(format!("{table} is of ONNX type {other}, not float16")),
    };
    if values.len() != width * vocabulary {
        return Err(format!("{table} holds {} values", values.len()));
    }
    let rows = transpose(&values, width, vocabulary);
    drop(values);

    // The table's names: itself and its casts to float.
    let mut names = vec![table.to_string()];
    let mut casts = Vec::new();
    for (position, node) in graph.node.iter().enumerate() {
        let to_float = node
            .attribute
            .iter()
            .any(|a| a.name == "to" && a.i == i64::from(FLOAT));
        if node.op_type == "Cast"
            && to_float
            && node.input.first().map(String::as_str) == Some(table)
        {
            names.extend(node.output.iter().cloned());
            casts.push(position);
        }
    }
    let reads_table = |input: &String| names.contains(input);
    let mut gather = None;
    let mut matmul = None;
    for (position, node) in graph.node.iter().enumerate() {
        if casts.contains(&position) || !node.input.iter().any(reads_table) {
            continue;
        }
        match node.op_type.as_str() {
            "Gather"
                if gather.is_none()
                    && node.input.len() == 2
                    && reads_table(&node.input[0])
                    && node.input[1] == ids_input
                    && node.attribute.iter().any(|a| a.name == "axis" && a.i == 1) =>
            {
                gather = Some(position)
            }
            "MatMul"
                if matmul.is_none()
                    && node.input.len() == 2
                    && reads_table(&node.input[1])
                    && !reads_table(&node.input[0]) =>
            {
                matmul = Some(position)
            }
            other => return Err(format!("{table} is read by an unexpected {other} node")),
        }
    }
    let gather = gather.ok_or_else(|| format!("no Gather of {ids_input} from {table}"))?;
    let matmul = matmul.ok_or_else(|| format!("no MatMul by {table}"))?;
    let gathered = graph.node[gather]
        .output
        .first()
        .cloned()
        .unwrap_or_default();
    let transposes: Vec<usize> = graph
        .node
        .iter()
        .enumerate()
        .filter(|(_, n)| n.input.contains(&gathered))
        .map(|(p, _)| p)
        .collect();
    let [transpose] = transposes[..] else {
        return Err(format!(
            "the Gather of {table} has {} readers",
            transposes.len()
        ));
    };
    let node = &graph.node[transpose];
    let perm_ok = node
        .attribute
        .iter()
        .any(|a| a.name == "perm" && a.ints == [1, 2, 0]);
    if node.op_type != "Transpose" || !perm_ok || node.output.len() != 1 {
        return Err(format!(
            "the Gather of {table} is read by {} instead of a Transpose to [1, 2, 0]",
            node.op_type
        ));
    }
    let embedded = node.output[0].clone();

    // Readers of the ids other than the Gather may only take their shape.
    for (position, node) in graph.node.iter_mut().enumerate() {
        if position == gather || !node.input.iter().any(|i| i == ids_input) {
            continue;
        }
        if node.op_type != "Shape" || node.input.len() != 1 {
            return Err(format!("{ids_input} is read by a {} node", node.op_type));
        }
        node.input[0] = EMBEDDINGS_INPUT.to_string();
    }
    for node in &mut graph.node {
        for input in &mut node.input {
            if *input == embedded {
                *input = EMBEDDINGS_INPUT.to_string();
            }
        }
    }
    let projection = &mut graph.node[matmul];
    let hidden = projection.input[0].clone();
    projection.op_type = "Identity".to_string();
    projection.input = vec![hidden];
    projection.attribute.clear();

    let dim = |value: tensor_shape_proto::dimension::Value| tensor_shape_proto::Dimension {
        value: Some(value),
        ..Default::default()
    };
    let input = graph
        .input
        .iter_mut()
        .find(|i| i.name == ids_input)
        .ok_or_else(|| format!("no graph input {ids_input}"))?;
    input.name = EMBEDDINGS_INPUT.to_string();
    let tokens = match input.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(type_proto::Value::TensorType(tensor)) => tensor
            .shape
            .as_ref()
            .and_then(|s| s.dim.get(1))
            .and_then(|d| d.value.clone()),
        _ => None,
    }
    .unwrap_or(tensor_shape_proto::dimension::Value::DimParam("L".into()));
    input.r#type = Some(tract_onnx::pb::TypeProto {
        value: Some(type_proto::Value::TensorType(type_proto::Tensor {
            elem_type: FLOAT,
            shape: Some(tract_onnx::pb::TensorShapeProto {
                dim: vec![
                    dim(tensor_shape_proto::dimension::Value::DimValue(1)),
                    dim(tokens),
                    dim(tensor_shape_proto::dimension::Value::DimValue(width as i64)),
                ],
            }),
        })),
        ..Default::default()
    });
    // Outputs that were the vocabulary's scores are now hidden states.
    for output in &mut graph.output {
        if let Some(type_proto::Value::TensorType(tensor)) =
            output.r#type.as_mut().and_then(|t| t.value.as_mut())
        {
            if let Some(last) = tensor.shape.as_mut().and_then(|s| s.dim.last_mut()) {
                if last.value
                    == Some(tensor_shape_proto::dimension::Value::DimValue(
                        vocabulary as i64,
                    ))
                {
                    last.value = Some(tensor_shape_proto::dimension::Value::DimValue(width as i64));
                }
            }
        }
    }
    let mut dropped: Vec<usize> = casts;
    dropped.extend([gather, transpose]);
    let mut position = 0;
    graph.node.retain(|_| {
        position += 1;
        !dropped.contains(&(position - 1))
    });
    graph.initializer.remove(index);
    TiedEmbedding::new(vocabulary, width, rows).ok_or_else(|| format!("{table} is empty"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tiled_transpose_is_the_plain_one() {
        for (height, width) in [(1, 1), (3, 200), (130, 67), (64, 128)] {
            let values: Vec<f16> = (0..height * width)
                .map(|i| f16::from_f32(i as f32))
                .collect();
            let tiled = transpose(&values, height, width);
            for row in 0..height {
                for column in 0..width {
                    assert_eq!(tiled[column * height + row], values[row * width + column]);
                }
            }
        }
    }

    #[test]
    fn lookup_and_projection_match_the_plain_product() {
        let (vocabulary, width) = (2500, 7);
        let rows: Vec<f16> = (0..vocabulary * width)
            .map(|i| f16::from_f32(((i * 37 % 101) as f32 - 50.0) / 64.0))
            .collect();
        let table = TiedEmbedding::new(vocabulary, width, rows.clone()).unwrap();
        let hidden: Vec<f32> = (0..3 * width).map(|i| (i as f32 - 9.0) / 5.0).collect();
        let scores = table.project(&hidden).unwrap();
        assert_eq!(scores.len(), 3 * vocabulary);
        for n in 0..3 {
            for v in 0..vocabulary {
                let expected: f32 = (0..width)
                    .map(|k| hidden[n * width + k] * rows[v * width + k].to_f32())
                    .sum();
                let got = scores[n * vocabulary + v];
                assert!(
                    (got - expected).abs() <= 1e-5,
                    "{n},{v}: {got} vs {expected}"
                );
            }
        }
        let looked = table.lookup(&[0, 2499, 5]).unwrap();
        assert_eq!(looked[width], rows[2499 * width].to_f32());
        assert_eq!(looked[2 * width + 3], rows[5 * width + 3].to_f32());
        assert!(table.lookup(&[2500]).is_none());
        assert!(table.project(&[0.0; 8]).is_none());
        assert!(TiedEmbedding::new(3, 2, vec![f16::ZERO; 5]).is_none());
    }
}
