package demo

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// product is one catalogue entry. It never changes after construction, so
// handlers read it without a lock; the view count lives apart in shop.views.
type product struct {
	ID          int    `json:"id"`
	Name        string `json:"name"`
	Category    string `json:"category"`
	PriceCents  int    `json:"price_cents"`
	Description string `json:"description"`
	Stock       int    `json:"stock"`
}

// Price formats the price for the main page.
func (p product) Price() string {
	return fmt.Sprintf("$%d.%02d", p.PriceCents/100, p.PriceCents%100)
}

var (
	adjectives = []string{"Classic", "Compact", "Deluxe", "Eco", "Handmade", "Light", "Modern", "Rustic", "Smart", "Sturdy", "Vintage", "Wireless"}
	materials  = []string{"Bamboo", "Ceramic", "Cotton", "Glass", "Leather", "Linen", "Oak", "Steel", "Walnut", "Wool"}
	nouns      = []string{"Backpack", "Blanket", "Bottle", "Chair", "Clock", "Desk", "Kettle", "Lamp", "Mug", "Pillow", "Shelf", "Speaker", "Teapot", "Wallet"}
	categories = []string{"Home", "Kitchen", "Office", "Outdoor", "Travel"}
)

// newCatalogue builds n products with ids 1..n, reproducible from seed.
func newCatalogue(n int, seed uint64) []product {
	r := rand.New(rand.NewPCG(seed, 0x636174616c6f67)) // stream "catalog"
	products := make([]product, n)
	for i := range products {
		adjective := adjectives[r.IntN(len(adjectives))]
		material := materials[r.IntN(len(materials))]
		noun := nouns[r.IntN(len(nouns))]
		products[i] = product{
			ID:         i + 1,
			Name:       adjective + " " + material + " " + noun,
			Category:   categories[r.IntN(len(categories))],
			PriceCents: 199 + r.IntN(49800),
			Description: "A " + strings.ToLower(adjective) + " " + strings.ToLower(noun) + " made of " + strings.ToLower(material) +
				", item " + strconv.Itoa(i+1) + " of our catalogue.",
			Stock: r.IntN(500),
		}
	}
	return products
}

// pickFeatured chooses k distinct products for the main page, reproducible
// from seed.
func pickFeatured(products []product, k int, seed uint64) []product {
	r := rand.New(rand.NewPCG(seed, 0x6665617475726564)) // stream "featured"
	k = min(k, len(products))
	featured := make([]product, k)
	for i, j := range r.Perm(len(products))[:k] {
		featured[i] = products[j]
	}
	return featured
}

func userEmail(id int) string {
	return "user" + strconv.Itoa(id) + "@example.com"
}

const mainPageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>hload demo shop</title>
</head>
<body>
<h1>hload demo shop</h1>
<p>{{.Total}} products in the catalogue. Featured today:</p>
<ul>
{{- range .Featured}}
<li><a href="/products/{{.ID}}">{{.Name}}</a> <span class="category">{{.Category}}</span> <span class="price">{{.Price}}</span></li>
{{- end}}
</ul>
</body>
</html>
`
