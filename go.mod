module github.com/ptilab/ptilab

go 1.26.5

require (
	github.com/stretchr/testify v1.12.1
	github.com/usbarmory/tamago v1.26.6
	golang.org/x/arch v0.33.0
	golang.org/x/sys v0.50.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
