// RUN: qidao-opt %s -p select-conv-algo | filecheck %s --check-prefixes=CHECK,AUTO,ANY
// RUN: qidao-opt %s -p 'select-conv-algo{algo="im2col"}' | filecheck %s --check-prefixes=CHECK,IM2COL,ANY
// RUN: qidao-opt %s -p 'select-conv-algo{algo="matmul"}' | filecheck %s --check-prefixes=CHECK,MATMUL,ANY
// RUN: qidao-opt %s -p 'select-conv-algo{algo="direct"}' | filecheck %s --check-prefixes=CHECK,DIRECT

// The rule (auto) gives a 3x3, stride-1 NHWC convolution of 16 -> 16 channels, a
// constant weight and 16 tiles (batch 4 of 2x2) Winograd F(4x4, 3x3): a pad to whole
// 4x4 tiles (6x6 -> 2x2 tiles read 10x10), the input transform, its [36, T, C] view, a batched matmul with the
// filter transformed at compile time, the output transform with the bias, and a
// slice back to 6x6 (a strided view: func.return gets a row-major copy of it).
// algo="im2col" gives it 9 strided windows concatenated along
// the channels and one matmul; algo="matmul" does not apply (3x3): direct, and why.
// CHECK-LABEL: func.func @three_by_three
// AUTO:        %{{.*}} = tg.pad %x low = [0, 1, 1, 0] high = [0, 3, 3, 0] value = 0.000000e+00 : tensor<4x6x6x16xf32> -> tensor<4x10x10x16xf32>
// AUTO-NEXT:   %[[V:.*]] = tg.winograd_input %{{.*}} tiles = [2, 2] : tensor<4x10x10x16xf32> -> tensor<16x36x16xf32>
// AUTO-NEXT:   %[[T:.*]] = tg.transpose %[[V]] perm = [1, 0, 2] : tensor<16x36x16xf32> -> tensor<36x16x16xf32, strided<[16, 576, 1]>>
// AUTO-NEXT:   %[[U:.*]] = tg.constant dense<{{.*}}> : tensor<36x16x16xf32>
// AUTO-NEXT:   %[[M:.*]] = tg.matmul %[[T]], %[[U]]
// AUTO-NEXT:   %[[Y:.*]] = tg.winograd_output %[[M]], %b tiles = [4, 2, 2] {qd.algo = "winograd: rule: 3x3 stride 1, 16 -> 16 channels, 16 tiles; F(4x4, 3x3)"} : (tensor<36x16x16xf32>, tensor<16xf32>) -> tensor<4x8x8x16xf32>
// AUTO-NEXT:   %y_crop = tg.slice %[[Y]] start = [0, 0, 0, 0] stop = [4, 6, 6, 16] step = [1, 1, 1, 1]
// AUTO-NEXT:   %y = tg.contiguous %y_crop
// AUTO-NEXT:   func.return %y
// IM2COL:      tg.pad %x low = [0, 1, 1, 0] high = [0, 1, 1, 0]
// IM2COL-COUNT-9: tg.slice
// IM2COL:      %[[P:.*]] = tg.concat {{.*}} axis = 3 : {{.*}} -> tensor<4x6x6x144xf32>
// IM2COL-NEXT: %[[W:.*]] = tg.view %w : tensor<3x3x16x16xf32> -> tensor<144x16xf32>
// IM2COL-NEXT: %[[MM:.*]] = tg.matmul %[[P]], %[[W]] {qd.algo = "im2col: algo=im2col"}
// IM2COL-NEXT: %y = tg.add %[[MM]], %b
// MATMUL:      %y = tg.conv2d {{.*}} {qd.algo = "direct: algo=matmul asked, but not a 1x1, stride-1, unpadded convolution"}
// DIRECT:      %y = tg.conv2d {{.*}} {qd.algo = "direct: algo=direct"}
func.func @three_by_three(%x: tensor<4x6x6x16xf32>, %b: tensor<16xf32>) -> tensor<4x6x6x16xf32> {
  %w = tg.constant dense<0.25> : tensor<3x3x16x16xf32>
  %y = tg.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<4x6x6x16xf32>, tensor<3x3x16x16xf32>, tensor<16xf32>) -> tensor<4x6x6x16xf32>
  func.return %y : tensor<4x6x6x16xf32>
}

// A 1x1 convolution: algo="matmul" makes it a matmul of the NHWC input with the
// weight viewed as [C, F] (the batch dimensions N, H broadcast against it);
// im2col's one window is the input itself, with no concat.
// CHECK-LABEL: func.func @one_by_one
// AUTO:        tg.conv2d {{.*}} {qd.algo = "direct: rule: winograd does not apply (not a 3x3, stride-1, undilated convolution)"}
// MATMUL:      %[[W1:.*]] = tg.view %w : tensor<1x1x16x32xf32> -> tensor<16x32xf32>
// MATMUL-NEXT: %y = tg.matmul %x, %[[W1]] {qd.algo = "matmul: algo=matmul"} : (tensor<2x5x5x16xf32>, tensor<16x32xf32>) -> tensor<2x5x5x32xf32>
// IM2COL:      %[[P1:.*]] = tg.slice %x start = [0, 0, 0, 0] stop = [2, 5, 5, 16] step = [1, 1, 1, 1]
// IM2COL-NOT:  tg.concat
// IM2COL:      tg.matmul %[[P1]]
func.func @one_by_one(%x: tensor<2x5x5x16xf32>, %w: tensor<1x1x16x32xf32>) -> tensor<2x5x5x32xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<2x5x5x16xf32>, tensor<1x1x16x32xf32>) -> tensor<2x5x5x32xf32>
  func.return %y : tensor<2x5x5x32xf32>
}

// A small output (at most 12 pixels over more than one row): the rule picks a
// matmul for a 1x1 convolution and im2col for any other (ConvNeXt's last
// downsampling, 2x2 stride 2 to 3x3 pixels), so one register tile of the matmul
// reads the weight once. Must not fire: 12 pixels in one row (the direct tile
// already reads the weight once), 16 pixels (4x4).
// CHECK-LABEL: func.func @small_output
// AUTO:        tg.matmul {{.*}} {qd.algo = "matmul: rule: 9 output pixels, one matmul tile: the weight is read once (direct reads it once per output row, 3 times)"}
// AUTO:        tg.concat
// AUTO:        tg.matmul {{.*}} {qd.algo = "im2col: rule: 9 output pixels, one matmul tile: the weight is read once (direct reads it once per output row, 3 times)"}
// AUTO:        %c = tg.conv2d {{.*}} {qd.algo = "direct: rule: winograd does not apply (not a 3x3, stride-1, undilated convolution)"}
// AUTO:        %d = tg.conv2d {{.*}} {qd.algo = "direct: rule: winograd does not apply (not a 3x3, stride-1, undilated convolution)"}
func.func @small_output(%x3: tensor<1x3x3x16xf32>, %w1: tensor<1x1x16x32xf32>, %x6: tensor<1x6x6x16xf32>, %w2: tensor<2x2x16x32xf32>, %x12: tensor<1x1x12x16xf32>, %x4: tensor<1x4x4x16xf32>) -> (tensor<1x3x3x32xf32>, tensor<1x3x3x32xf32>, tensor<1x1x12x32xf32>, tensor<1x4x4x32xf32>) {
  %a = tg.conv2d %x3, %w1 strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x3x3x16xf32>, tensor<1x1x16x32xf32>) -> tensor<1x3x3x32xf32>
  %b = tg.conv2d %x6, %w2 strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x16xf32>, tensor<2x2x16x32xf32>) -> tensor<1x3x3x32xf32>
  %c = tg.conv2d %x12, %w1 strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x1x12x16xf32>, tensor<1x1x16x32xf32>) -> tensor<1x1x12x32xf32>
  %d = tg.conv2d %x4, %w1 strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x4x4x16xf32>, tensor<1x1x16x32xf32>) -> tensor<1x4x4x32xf32>
  func.return %a, %b, %c, %d : tensor<1x3x3x32xf32>, tensor<1x3x3x32xf32>, tensor<1x1x12x32xf32>, tensor<1x4x4x32xf32>
}

// Must not fire (direct, with the reason), whatever is asked: an NCHW convolution
// (the layout pass left it), a grouped one, and Winograd for a weight that is not a
// constant, a convolution with too few channels or too few tiles (6x6: 2x2).
// CHECK-LABEL: func.func @stays_direct
// ANY:         tg.conv2d {{.*}} {qd.algo = "direct: {{.*}}an NCHW convolution (the layout pass kept it){{.*}}"}
// ANY:         tg.conv2d {{.*}} {qd.algo = "direct: {{.*}}a grouped convolution{{.*}}"}
// DIRECT-COUNT-5: tg.conv2d {{.*}} {qd.algo = "direct: algo=direct"}
// AUTO:        tg.conv2d {{.*}} {qd.algo = "direct: rule: winograd does not apply (the weight is not a constant (its transform is made once))"}
// AUTO:        tg.conv2d {{.*}} {qd.algo = "direct: rule: 8 -> 8 channels, too few for winograd"}
// AUTO:        tg.conv2d {{.*}} {qd.algo = "direct: rule: 4 4x4 tiles, too few for winograd"}
// CHECK-NOT:   tg.winograd_input
func.func @stays_direct(%x: tensor<1x16x6x6xf32>, %wn: tensor<16x16x3x3xf32>, %xh: tensor<1x6x6x16xf32>, %wg: tensor<3x3x8x16xf32>, %wi: tensor<3x3x16x16xf32>, %x8: tensor<1x6x6x8xf32>) -> (tensor<1x16x6x6xf32>, tensor<1x6x6x16xf32>, tensor<1x6x6x16xf32>, tensor<1x6x6x8xf32>, tensor<1x6x6x16xf32>) {
  %a = tg.conv2d %x, %wn strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x6x6xf32>
  %b = tg.conv2d %xh, %wg strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 2 layout = "NHWC" : (tensor<1x6x6x16xf32>, tensor<3x3x8x16xf32>) -> tensor<1x6x6x16xf32>
  %c = tg.conv2d %xh, %wi strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x16xf32>, tensor<3x3x16x16xf32>) -> tensor<1x6x6x16xf32>
  %w8 = tg.constant dense<0.5> : tensor<3x3x8x8xf32>
  %d = tg.conv2d %x8, %w8 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x8xf32>, tensor<3x3x8x8xf32>) -> tensor<1x6x6x8xf32>
  %w16 = tg.constant dense<0.5> : tensor<3x3x16x16xf32>
  %e = tg.conv2d %xh, %w16 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x16xf32>, tensor<3x3x16x16xf32>) -> tensor<1x6x6x16xf32>
  func.return %a, %b, %c, %d, %e : tensor<1x16x6x6xf32>, tensor<1x6x6x16xf32>, tensor<1x6x6x16xf32>, tensor<1x6x6x8xf32>, tensor<1x6x6x16xf32>
}

// A weight of half of L2 or more (a 4 MiB 1x1, 1024 -> 1024; a 4.5 MiB 3x3 that
// Winograd does not take; exactly 1 MiB, 1024 -> 256) over several output rows:
// the direct kernel would stream it once per row, so the rule takes the matmul
// (1x1) or im2col, which read it once. Under 1 MiB (1024 -> 255), or over one
// output row, the rule keeps direct.
// CHECK-LABEL: func.func @weight_past_l2
// AUTO:        tg.matmul {{.*}} {qd.algo = "matmul: rule: winograd does not apply (not a 3x3, stride-1, undilated convolution); a 4.0 MiB weight, past L2: the matmul reads it once, direct once per output row (4 times)"}
// AUTO:        tg.matmul {{.*}} {qd.algo = "im2col: rule: winograd does not apply (the weight is not a constant (its transform is made once)); a 4.5 MiB weight, past L2: the matmul reads it once, direct once per output row (7 times)"}
// AUTO:        tg.matmul {{.*}} {qd.algo = "matmul: rule: winograd does not apply (not a 3x3, stride-1, undilated convolution); a 1.0 MiB weight, past L2: the matmul reads it once, direct once per output row (4 times)"}
// AUTO:        %c = tg.conv2d {{.*}} {qd.algo = "direct: rule: winograd does not apply (not a 3x3, stride-1, undilated convolution)"}
// AUTO:        %d = tg.conv2d {{.*}} {qd.algo = "direct: rule: winograd does not apply (not a 3x3, stride-1, undilated convolution)"}
func.func @weight_past_l2(%x: tensor<1x4x4x1024xf32>, %w: tensor<1x1x1024x1024xf32>, %x3: tensor<1x7x7x256xf32>, %w3: tensor<3x3x256x512xf32>, %w1: tensor<1x1x1024x256xf32>, %w2: tensor<1x1x1024x255xf32>, %row: tensor<1x1x16x1024xf32>) -> (tensor<1x4x4x1024xf32>, tensor<1x7x7x512xf32>, tensor<1x4x4x256xf32>, tensor<1x4x4x255xf32>, tensor<1x1x16x1024xf32>) {
  %a = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x4x4x1024xf32>, tensor<1x1x1024x1024xf32>) -> tensor<1x4x4x1024xf32>
  %b = tg.conv2d %x3, %w3 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x7x7x256xf32>, tensor<3x3x256x512xf32>) -> tensor<1x7x7x512xf32>
  %e = tg.conv2d %x, %w1 strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x4x4x1024xf32>, tensor<1x1x1024x256xf32>) -> tensor<1x4x4x256xf32>
  %c = tg.conv2d %x, %w2 strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x4x4x1024xf32>, tensor<1x1x1024x255xf32>) -> tensor<1x4x4x255xf32>
  %d = tg.conv2d %row, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x1x16x1024xf32>, tensor<1x1x1024x1024xf32>) -> tensor<1x1x16x1024xf32>
  func.return %a, %b, %e, %c, %d : tensor<1x4x4x1024xf32>, tensor<1x7x7x512xf32>, tensor<1x4x4x256xf32>, tensor<1x4x4x255xf32>, tensor<1x1x16x1024xf32>
}

// Winograd's tile size: F(4x4, 3x3) streams a transformed filter of 36 points
// through a batched matmul of one row per 4x4 tile. With fewer than 32 tiles and
// 1 MiB or more of it (96 -> 96 channels on 14 x 14: 16 tiles, 1.3 MiB) the rule
// takes F(2x2, 3x3): 16 points (0.6 MiB) for 49 rows. Not with a smaller filter
// (64 -> 64: 0.6 MiB at 36 points) or with 32 tiles or more (28 x 28: 49 tiles).
// CHECK-LABEL: func.func @winograd_tile_size
// AUTO:        %[[V:.*]] = tg.winograd_input %{{.*}} tiles = [7, 7] size = 2 : tensor<1x16x16x96xf32> -> tensor<49x16x96xf32>
// AUTO:        tg.constant dense<{{.*}}> : tensor<16x96x96xf32>
// AUTO:        tg.winograd_output %{{.*}} tiles = [1, 7, 7] size = 2 {qd.algo = "winograd: rule: 3x3 stride 1, 96 -> 96 channels, 16 tiles; F(2x2, 3x3): 16 4x4 tiles would stream a 1.3 MiB transformed filter; 49 2x2 tiles stream 0.6 MiB"} : (tensor<16x49x96xf32>, tensor<96xf32>) -> tensor<1x14x14x96xf32>
// AUTO:        tg.winograd_input %{{.*}} tiles = [4, 4] : tensor<1x18x18x64xf32> -> tensor<16x36x64xf32>
// AUTO:        tg.winograd_output %{{.*}} tiles = [1, 4, 4] {qd.algo = "winograd: rule: 3x3 stride 1, 64 -> 64 channels, 16 tiles; F(4x4, 3x3)"}
// AUTO:        tg.winograd_input %{{.*}} tiles = [7, 7] : tensor<1x30x30x96xf32> -> tensor<49x36x96xf32>
// AUTO:        tg.winograd_output %{{.*}} tiles = [1, 7, 7] {qd.algo = "winograd: rule: 3x3 stride 1, 96 -> 96 channels, 49 tiles; F(4x4, 3x3)"}
func.func @winograd_tile_size(%x: tensor<1x14x14x96xf32>, %b: tensor<96xf32>, %x64: tensor<1x14x14x64xf32>, %x28: tensor<1x28x28x96xf32>) -> (tensor<1x14x14x96xf32>, tensor<1x14x14x64xf32>, tensor<1x28x28x96xf32>) {
  %w = tg.constant dense<0.5> : tensor<3x3x96x96xf32>
  %y = tg.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x14x14x96xf32>, tensor<3x3x96x96xf32>, tensor<96xf32>) -> tensor<1x14x14x96xf32>
  %w64 = tg.constant dense<0.5> : tensor<3x3x64x64xf32>
  %y64 = tg.conv2d %x64, %w64 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x14x14x64xf32>, tensor<3x3x64x64xf32>) -> tensor<1x14x14x64xf32>
  %y28 = tg.conv2d %x28, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x28x28x96xf32>, tensor<3x3x96x96xf32>) -> tensor<1x28x28x96xf32>
  func.return %y, %y64, %y28 : tensor<1x14x14x96xf32>, tensor<1x14x14x64xf32>, tensor<1x28x28x96xf32>
}
