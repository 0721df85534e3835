#!/bin/sh
# A native driver that exits 0 but prints something that is not a result line.
echo "Segmentation fault? no: just noise"
