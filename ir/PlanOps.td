//===- PlanOps.td - ops of the plan dialect ----------------*- tablegen -*-===//
//
// plan.arena (the one allocation, a symbol table), plan.buffer (a named byte
// range in it), plan.step (one kernel call on buffers) and plan.free (the end
// of a buffer's lifetime). Fields mirror docs/plan-format.md.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_PLANOPS
#define REMAT_IR_PLANOPS

include "ir/PlanDialect.td"
include "mlir/IR/SymbolInterfaces.td"

class Plan_Op<string mnemonic, list<Trait> traits = []>
    : Op<Plan_Dialect, mnemonic, traits> {
  let hasVerifier = 1;
}

def Plan_ArenaOp : Plan_Op<"arena", [IsolatedFromAbove, NoTerminator,
                                     SingleBlock, SymbolTable]> {
  let summary = "the one arena: its size, alignment and the scheduled step";
  let description = [{
    `bytes` is the size of the single allocation (> 0) and `alignment` (a
    power of two) divides every buffer offset. The body holds the buffers
    and, in execution order, the steps and frees; nothing else. `loss`,
    when present, names the buffer holding the loss: a float scalar.

    Besides the per-op checks, the arena verifies that `param`,
    `optimizer` and `input` buffers share their bytes with no other buffer
    and that no step uses a buffer after its `plan.free`.

    ```mlir
    plan.arena bytes(256) alignment(64) loss(@loss) {
      plan.buffer @x "input" : f32 [2, 4] offset 0 bytes 32 data {kind = "randn"}
      plan.buffer @w "param" : f32 [4] offset 64 bytes 16 init {kind = "zeros"}
      plan.buffer @h "activation" : f32 [2, 4] offset 128 bytes 32
      plan.buffer @loss "activation" : f32 [] offset 192 bytes 4
      plan.step "sub" (@x, @w) -> (@h) phase "forward"
      plan.step "mse" (@h, @x) -> (@loss) phase "forward"
      plan.free @h
    }
    ```
  }];
  let arguments = (ins I64Attr:$bytes, I64Attr:$alignment,
                       OptionalAttr<FlatSymbolRefAttr>:$loss);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `bytes` `(` $bytes `)` `alignment` `(` $alignment `)`
    (`loss` `(` $loss^ `)`)? attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    // An arena with an empty body block, ready for buffers and steps.
    OpBuilder<(ins "int64_t":$bytes, "int64_t":$alignment)>
  ];
  let extraClassDeclaration = [{
    /// The body block holding the buffers, steps and frees.
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    /// The signed values of `bytes` and `alignment`.
    int64_t getBytesValue() { return getBytesAttr().getInt(); }
    int64_t getAlignmentValue() { return getAlignmentAttr().getInt(); }
  }];
}

def Plan_BufferOp : Plan_Op<"buffer", [HasParent<"ArenaOp">, Symbol]> {
  let summary = "a named byte range of the arena holding one tensor";
  let description = [{
    The fields of a plan file buffer. `role` is `param`, `grad`,
    `optimizer`, `input`, `activation` or `temporary`; `dtype` is f32,
    f16, bf16, i32 or i64; every dim of `shape` is >= 1 (`[]` is a
    scalar). `bytes` is exactly product(shape) x the dtype's size, and
    `offset` is a multiple of the arena's alignment with
    `offset + bytes <= arena bytes`. `init` (how the runtime initializes
    the buffer once) is required on, and only allowed on, `param` and
    `optimizer` buffers, which must be float; `data` (how it synthesizes an
    input each step) is only allowed on `input` buffers.

    ```mlir
    plan.buffer @"adam_m:h.0.wq" "optimizer" : f32 [32, 32] offset 4096 bytes 4096
        init {kind = "zeros"}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$role,
                       TypeAttr:$dtype, DenseI64ArrayAttr:$shape,
                       I64Attr:$offset, I64Attr:$bytes,
                       OptionalAttr<DictionaryAttr>:$init,
                       OptionalAttr<DictionaryAttr>:$data);
  let assemblyFormat = [{
    $sym_name $role `:` $dtype $shape `offset` $offset `bytes` $bytes
    (`init` $init^)? (`data` $data^)? attr-dict
  }];
  let extraClassDeclaration = [{
    /// Param, optimizer and input buffers outlive the step list: the
    /// runtime writes them outside it, so they share bytes with nothing.
    bool isPersistent();
    /// The signed values of `offset` and `bytes` (I64Attr's getters return
    /// them unsigned, which hides a negative value).
    int64_t getOffsetValue() { return getOffsetAttr().getInt(); }
    int64_t getBytesValue() { return getBytesAttr().getInt(); }
    /// The first byte past the buffer (offset + bytes).
    int64_t getEnd() { return getOffsetValue() + getBytesValue(); }
  }];
}

def Plan_StepOp : Plan_Op<"step", [HasParent<"ArenaOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "one kernel call: a graph op on buffers";
  let description = [{
    Runs the op `graph.<op_name>` (docs/ops.md) reading the `inputs`
    buffers, in the op's operand order, and writing the `outputs`, in its
    result order. `kernel_attrs` are the op's attributes (printed after
    `attrs`). `phase` is `forward`, `backward` or `optimizer`;
    `recompute` marks a recomputation of an earlier forward step. Both are
    informational.

    Checked: the op exists in the graph dialect, every symbol names a
    `plan.buffer`, outputs are distinct, no step writes an `input`
    buffer, only `sgd_update` / `adamw_update` write `param` and
    `optimizer` buffers, and they do so in place (outputs = param and
    state inputs).

    ```mlir
    plan.step "attention" (@q, @k, @v) -> (@o) phase "forward" attrs {scale = 1.250000e-01 : f32}
    plan.step "dropout" (@h0) -> (@h1) phase "forward" recompute attrs {rate = 1.000000e-01 : f32, seed = 7 : i64}
    plan.step "sgd_update" (@w, @"grad:w", @"momentum:w") -> (@w, @"momentum:w") phase "optimizer"
        attrs {lr = 1.000000e-01 : f32, momentum = 5.000000e-01 : f32, weight_decay = 0.000000e+00 : f32}
    ```
  }];
  let arguments = (ins StrAttr:$op_name, FlatSymbolRefArrayAttr:$inputs,
                       FlatSymbolRefArrayAttr:$outputs, StrAttr:$phase,
                       UnitAttr:$recompute,
                       OptionalAttr<DictionaryAttr>:$kernel_attrs);
  let assemblyFormat = [{
    $op_name ` ` `(` custom<SymbolList>($inputs) `)` `->`
    `(` custom<SymbolList>($outputs) `)` `phase` $phase
    (`recompute` $recompute^)? (`attrs` $kernel_attrs^)? attr-dict
  }];
}

def Plan_FreeOp : Plan_Op<"free", [HasParent<"ArenaOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the end of a buffer's lifetime";
  let description = [{
    Documents that `buffer` is dead from here on: no later step reads or
    writes it, and its bytes may be reused by a buffer a later step writes.
    Param, optimizer and input buffers live across steps and are never
    freed.

    ```mlir
    plan.free @h
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$buffer);
  let hasVerifier = 0;
  let assemblyFormat = "$buffer attr-dict";
}

#endif // REMAT_IR_PLANOPS
