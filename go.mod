module github.com/ptilab/ptilab

go 1.26.5

require (
	github.com/diskfs/go-diskfs v1.9.4
	github.com/stretchr/testify v1.12.1
	github.com/usbarmory/tamago v1.26.6
	golang.org/x/arch v0.33.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/anchore/go-lzo v0.1.0 // indirect
	github.com/djherbis/times v1.6.0 // indirect
	github.com/elliotwutingfeng/asciiset v0.0.0-20260129054604-cfde2086bc57 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.18.5 // indirect
	github.com/pierrec/lz4/v4 v4.1.26 // indirect
	github.com/pkg/xattr v0.4.12 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	github.com/ulikunitz/xz v0.5.15 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
