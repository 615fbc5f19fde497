// RUN: qidao-opt %s | qidao-opt | filecheck %s

// The amx ops round-trip: a 16 x 64 x 16 int8 product in tiles 0 (C), 4 (A)
// and 6 (B), the configuration first, the tiles released last.
// CHECK-LABEL: func.func @tile_product
// CHECK-NEXT:    amx.tile_config rows = [0, 16, 0, 0, 16, 0, 16, 0] colsb = [0, 64, 0, 0, 64, 0, 64, 0]
// CHECK-NEXT:    amx.tile_zero 1
// CHECK-NEXT:    amx.tile_load 4, %a[%i, %k] : memref<32x64xi8> rows_dim 0
// CHECK-NEXT:    amx.tile_load 6, %b[%k, %i, %k] : memref<16x32x4xi8> rows_dim 0
// CHECK-NEXT:    amx.tile_mul 1, 4, 6
// CHECK-NEXT:    amx.tile_store 1, %c[%i, %k] : memref<32x32xi32, strided<[64, 1]>> rows_dim 0
// CHECK-NEXT:    amx.tile_release
func.func @tile_product(%a: memref<32x64xi8>, %b: memref<16x32x4xi8>, %c: memref<32x32xi32, strided<[64, 1]>>, %i: index, %k: index) {
  amx.tile_config rows = [0, 16, 0, 0, 16, 0, 16, 0] colsb = [0, 64, 0, 0, 64, 0, 64, 0]
  amx.tile_zero 1
  amx.tile_load 4, %a[%i, %k] : memref<32x64xi8> rows_dim 0
  amx.tile_load 6, %b[%k, %i, %k] : memref<16x32x4xi8> rows_dim 0
  amx.tile_mul 1, 4, 6
  amx.tile_store 1, %c[%i, %k] : memref<32x32xi32, strided<[64, 1]>> rows_dim 0
  amx.tile_release
  func.return
}

// A 16 x 32 x 16 bfloat16 product (tdpbf16ps): A and B as their i16 bits (B in
// pairs of rows, [K/2, N, 2]), the float32 sums loaded and stored as f32.
// CHECK-LABEL: func.func @tile_product_bf16
// CHECK-NEXT:    amx.tile_config rows = [16, 0, 0, 0, 16, 0, 16, 0] colsb = [64, 0, 0, 0, 64, 0, 64, 0]
// CHECK-NEXT:    amx.tile_load 0, %c[%i, %i] : memref<32x32xf32> rows_dim 0
// CHECK-NEXT:    amx.tile_load 4, %a[%i, %k] : memref<32x64xi16> rows_dim 0
// CHECK-NEXT:    amx.tile_load 6, %b[%k, %i, %k] : memref<32x32x2xi16> rows_dim 0
// CHECK-NEXT:    amx.tile_mulf 0, 4, 6
// CHECK-NEXT:    amx.tile_store 0, %c[%i, %i] : memref<32x32xf32> rows_dim 0
// CHECK-NEXT:    amx.tile_release
func.func @tile_product_bf16(%a: memref<32x64xi16>, %b: memref<32x32x2xi16>, %c: memref<32x32xf32>, %i: index, %k: index) {
  amx.tile_config rows = [16, 0, 0, 0, 16, 0, 16, 0] colsb = [64, 0, 0, 0, 64, 0, 64, 0]
  amx.tile_load 0, %c[%i, %i] : memref<32x32xf32> rows_dim 0
  amx.tile_load 4, %a[%i, %k] : memref<32x64xi16> rows_dim 0
  amx.tile_load 6, %b[%k, %i, %k] : memref<32x32x2xi16> rows_dim 0
  amx.tile_mulf 0, 4, 6
  amx.tile_store 0, %c[%i, %i] : memref<32x32xf32> rows_dim 0
  amx.tile_release
  func.return
}
