//! PReLU written as two of tract's fused element-wise chains, applied to every graph before tract
//! reads it (`docs/performance.md`, "tract against onnxruntime").
//!
//! tract 0.23 has no PReLU kernel: it lowers `PRelu(x, a)` to a comparison, a select and a
//! multiplication (`GT`, `Iff`, `Mul`), and the comparison and the select are slow. FaceMesh
//! carries 23 of them, a third of its run time. The same function as
//! `Relu(x) + a * Min(x, 0)` becomes two `OptBinChain`s (`Min+Mul`, `Max+Add`) and FaceMesh runs
//! about 15 % faster. For finite `x` and `a` the result is bit for bit the same: for `x < 0` it is
//! `0 + a*x`, which is `a*x` exactly; for `x >= 0` it is `x + a*0`, which is `x` (the sign of a
//! zero aside). Not for non-finite values: tract's `max`/`min` drop a NaN (it comes out 0, not NaN)
//! and an infinite slope makes `x + inf*0` a NaN. The models' inputs are decoded pixels and audio
//! samples and their slopes are trained constants, all finite; the zero is float32, as are the
//! activations of every model the engine loads.

use tract_onnx::pb::{GraphProto, NodeProto, TensorProto};

/// The name of the scalar zero the rewritten nodes share.
const ZERO: &str = "vouch.prelu.zero";

/// Rewrites every `PRelu` node of the top-level graph as `Relu(x) + a * Min(x, 0)`; returns how
/// many it rewrote.
pub(super) fn rewrite_prelu(graph: &mut GraphProto) -> usize {
    if !graph.node.iter().any(|node| node.op_type == "PRelu") {
        return 0;
    }
    let mut rewritten = 0;
    let mut nodes = Vec::with_capacity(graph.node.len() + 64);
    for node in std::mem::take(&mut graph.node) {
        if node.op_type != "PRelu" || node.input.len() != 2 || node.output.len() != 1 {
            nodes.push(node);
            continue;
        }
        let (x, slope, out) = (&node.input[0], &node.input[1], &node.output[0]);
        let positive = format!("{out}.vouch.positive");
        let negative = format!("{out}.vouch.negative");
        let scaled = format!("{out}.vouch.scaled");
        let step = |op: &str, inputs: &[&str], output: &str| NodeProto {
            input: inputs.iter().map(|name| (*name).to_owned()).collect(),
            output: vec![output.to_owned()],
            name: format!("{out}.vouch.{}", op.to_lowercase()),
            op_type: op.to_owned(),
            ..NodeProto::default()
        };
        nodes.push(step("Relu", &[x], &positive));
        nodes.push(step("Min", &[x, ZERO], &negative));
        nodes.push(step("Mul", &[&negative, slope], &scaled));
        nodes.push(step("Add", &[&positive, &scaled], out));
        rewritten += 1;
    }
    graph.node = nodes;
    if rewritten > 0 {
        graph.initializer.push(TensorProto {
            name: ZERO.to_owned(),
            // FLOAT, a scalar.
            data_type: 1,
            float_data: vec![0.0],
            ..TensorProto::default()
        });
    }
    rewritten
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prelu_graph() -> GraphProto {
        GraphProto {
            node: vec![NodeProto {
                input: vec!["x".into(), "a".into()],
                output: vec!["y".into()],
                name: "PRelu_1".into(),
                op_type: "PRelu".into(),
                ..NodeProto::default()
            }],
            ..GraphProto::default()
        }
    }

    #[test]
    fn each_prelu_becomes_relu_min_mul_add_over_one_shared_zero() {
        let mut graph = prelu_graph();
        graph.node.push(graph.node[0].clone());
        graph.node[1].output = vec!["z".into()];
        assert_eq!(rewrite_prelu(&mut graph), 2);
        let ops: Vec<&str> = graph.node.iter().map(|n| n.op_type.as_str()).collect();
        assert_eq!(
            ops,
            ["Relu", "Min", "Mul", "Add", "Relu", "Min", "Mul", "Add"]
        );
        assert_eq!(graph.node[3].output, ["y"]);
        assert_eq!(graph.node[7].output, ["z"]);
        assert_eq!(graph.node[1].input, ["x", ZERO]);
        assert_eq!(graph.initializer.len(), 1);
        // A graph without PReLU is left as it is.
        assert_eq!(rewrite_prelu(&mut GraphProto::default()), 0);
    }

    /// FaceMesh (23 PReLU) gives the same outputs, bit for bit, rewritten (what
    /// [`crate::infer::Model::load`] runs) and as the file is, on a face-sized input with negative
    /// and positive values.
    #[test]
    fn facemesh_rewritten_gives_the_same_bits() {
        use tract_onnx::prelude::*;

        use crate::infer::{Model, FACE_LANDMARKS};

        let dir = crate::infer::tests::models_dir();
        let shape = FACE_LANDMARKS.inputs[0];
        let input: Vec<f32> = (0..shape.iter().product::<usize>() as u64)
            .map(|i| (i.wrapping_mul(2_654_435_761) % 65_536) as f32 / 65_536.0 - 0.3)
            .collect();
        let rewritten = Model::load(&dir, FACE_LANDMARKS)
            .expect("load")
            .run(&[&input])
            .expect("run");
        let original = tract_onnx::onnx()
            .model_for_path(dir.join(FACE_LANDMARKS.file))
            .and_then(|m| m.with_input_fact(0, InferenceFact::dt_shape(f32::datum_type(), shape)))
            .and_then(|m| m.into_optimized())
            .and_then(|m| m.into_runnable())
            .expect("load as the file is");
        let tensor = Tensor::from_shape(shape, &input).expect("input");
        let outputs = original.run(tvec!(tensor.into_tvalue())).expect("run");
        assert_eq!(outputs.len(), rewritten.len());
        for (output, rewritten) in outputs.iter().zip(&rewritten) {
            let bits: Vec<u32> = output
                .to_plain_array_view::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect();
            let rewritten: Vec<u32> = rewritten.iter().map(|v| v.to_bits()).collect();
            assert_eq!(bits, rewritten);
        }
    }
}
