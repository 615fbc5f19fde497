// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: amx.tile_mul: acc, a and b must be three different tiles, got [0, 4, 4]
func.func @same_tile() {
  amx.tile_mul 0, 4, 4
  func.return
}

// -----

// CHECK: amx.tile_zero: the tile must be a tile 0..7, got 8
func.func @no_such_tile() {
  amx.tile_zero 8
  func.return
}

// -----

// CHECK: amx.tile_config: tile 1 must be 1..16 rows of 1..64 bytes, or 0 and 0 (unused), got 17 x 64
func.func @too_many_rows() {
  amx.tile_config rows = [0, 17, 0, 0, 0, 0, 0, 0] colsb = [0, 64, 0, 0, 0, 0, 0, 0]
  func.return
}

// -----

// CHECK: amx.tile_config: tile 2's row of 6 bytes is not whole int32s (a multiple of 4)
func.func @ragged_row() {
  amx.tile_config rows = [0, 0, 1, 0, 0, 0, 0, 0] colsb = [0, 0, 6, 0, 0, 0, 0, 0]
  func.return
}

// -----

// CHECK: amx.tile_config: rows and colsb must have 8 entries (one per tile), got 2 and 2
func.func @short_config() {
  amx.tile_config rows = [16, 16] colsb = [64, 64]
  func.return
}

// -----

// CHECK: amx.tile_load: the last dimension of memref<16x64xi8, strided<[1, 16]>> must have stride 1 (a row's bytes are contiguous)
func.func @strided_row(%a: memref<16x64xi8, strided<[1, 16]>>, %i: index) {
  amx.tile_load 4, %a[%i, %i] : memref<16x64xi8, strided<[1, 16]>> rows_dim 0
  func.return
}

// -----

// CHECK: amx.tile_store: rows_dim must be a dimension before the last of memref<16x16xi32> (0..0), got 1
func.func @rows_along_the_row(%c: memref<16x16xi32>, %i: index) {
  amx.tile_store 0, %c[%i, %i] : memref<16x16xi32> rows_dim 1
  func.return
}

// -----

// CHECK: amx.tile_load: the memref must hold i8, i16 (bfloat16 bits), i32 or f32, got memref<16x16xf64>
func.func @double_tile(%c: memref<16x16xf64>, %i: index) {
  amx.tile_load 0, %c[%i, %i] : memref<16x16xf64> rows_dim 0
  func.return
}

// -----

// bfloat16s move as their i16 bits, not as bf16.

// CHECK: amx.tile_store: the memref must hold i8, i16 (bfloat16 bits), i32 or f32, got memref<16x32xbf16>
func.func @bf16_tile(%c: memref<16x32xbf16>, %i: index) {
  amx.tile_store 0, %c[%i, %i] : memref<16x32xbf16> rows_dim 0
  func.return
}

// -----

// CHECK: amx.tile_mulf: acc, a and b must be three different tiles, got [1, 4, 1]
func.func @same_tile_mulf() {
  amx.tile_mulf 1, 4, 1
  func.return
}

// -----

// CHECK: amx.tile_mulf: b must be a tile 0..7, got 9
func.func @no_such_tile_mulf() {
  amx.tile_mulf 0, 4, 9
  func.return
}
